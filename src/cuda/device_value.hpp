// A scalar result stored into a caller's CUDA array: the solve's value (potential_views::cost), so
// that callers whose outputs live on the GPU (the Python package's CUDA tensors) get it there with
// the potentials, without a fill of their own after the solve.
// Plain C++ (no CUDA headers): the solver includes this.
#pragma once

#include <cstdint>
#include <optional>

#include "flashsinkhorn/array_view.hpp"

namespace flashsinkhorn::detail {

// out[0] = value, rounded once to out's dtype, in the order of the caller's stream (unset: the
// legacy default stream). The value travels as a kernel argument: no host-device copy, no wait.
void write_value_to_device(double value, const mutable_vector_view& out, std::optional<std::uintptr_t> caller_stream);

}  // namespace flashsinkhorn::detail
