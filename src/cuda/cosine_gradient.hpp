// The cosine cost's chain rule on the device, for point gradients of a problem whose points live in
// CUDA memory (solver.cpp): the backend's gradient with respect to the normalised points x̂ = x/‖x‖,
// then per row
//   ∇_x = (I − x̂x̂ᵀ)·∇_x̂ / ‖x‖
// (core/normalisation_chain_rules.hpp's formula and order of operations), from the caller's points
// `input` into the caller's view `out`, both on the backend's GPU: nothing crosses to the host.
// Plain C++ (no CUDA headers): the solver includes this.
#pragma once

#include <cstdint>
#include <optional>

#include "core/backend.hpp"
#include "flashsinkhorn/array_view.hpp"

namespace flashsinkhorn::detail {

// `rows`: the side whose gradient the backend holds (point_gradient done); `input`: that side's
// points as given, (count, d); `out`: (count, d). Runs in the order of the caller's stream
// (options::cuda_stream) and returns when `out` is written.
void cosine_gradient_on_device(const backend& compute, side rows, const matrix_view& input,
                               const mutable_matrix_view& out, std::optional<std::uintptr_t> caller_stream);

}  // namespace flashsinkhorn::detail
