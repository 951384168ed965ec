// The copies between the caller's CUDA arrays and the host that the host paths of solver.hpp
// ("CUDA inputs") make: the problem to the host for the CPU backend, label costs and
// the host terms after a solve (plan products, weight gradients, Hessian products); a result
// computed on the host into a CUDA output. Every copy is counted.
// Plain C++ (no CUDA headers): the solver includes this.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "flashsinkhorn/problem.hpp"
#include "flashsinkhorn/transfer_statistics.hpp"

namespace flashsinkhorn::detail {

// The problem with every CUDA view of X, Y, a, b, initial_f, initial_g replaced by a contiguous host
// copy in the same dtype (host views are kept as they are; the label cost is kept as given).
struct host_copy_of_problem {
  std::vector<unsigned char> x, y, a, b, initial_f, initial_g;  // the copies' bytes
  problem view;                                                 // reads them
};

// Copies in the order of the caller's stream (options::cuda_stream; unset: the legacy default
// stream) and waits for them.
host_copy_of_problem copy_problem_to_host(const problem& p, std::optional<std::uintptr_t> caller_stream,
                                          transfer_statistics* transfers);

// `values` ((out.rows, out.cols) row-major, float64) converted to out's dtype and copied into the
// CUDA view `out`, in the order of the caller's stream; returns when the copy is complete.
void copy_matrix_to_device(const std::vector<double>& values, const mutable_matrix_view& out,
                           std::optional<std::uintptr_t> caller_stream, transfer_statistics* transfers);

}  // namespace flashsinkhorn::detail
