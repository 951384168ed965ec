// The files `solve --out DIR` writes: f.npy (n,), g.npy (m,) and transport_x.npy (n, d), the
// barycentric projection T(x_i) = Σ_j P_ij y_j / Σ_j P_ij. float64 in fp64 mode, float32 otherwise.
#pragma once

#include "atomic_output.hpp"
#include "flashsinkhorn/solver.hpp"

namespace flashsinkhorn::cli {

// Stages the three files in `output` (the caller commits). Throws std::runtime_error naming the
// array if a value is not finite.
void stage_solution_files(const solver& solved, const result& r, std::int64_t dims, dtype stored_as,
                          atomic_output& output);

}  // namespace flashsinkhorn::cli
