// Checks of the optimisers' options and callbacks; each failure throws invalid_argument naming the
// field (e.g. "trust_region_options.initial_radius") and the value given.
#pragma once

#include <string_view>

#include "flashsinkhorn/optim/hybrid.hpp"

namespace flashsinkhorn::optim::detail {

void validate(const lanczos_options& options, int dimension);
void validate(const newton_cg_options& options);
void validate(const trust_region_options& options);
void validate(const adam_options& options);
void validate(const hybrid_options& options);

// method: the caller's name for the message. needs_hvp: the method uses objective.hvp.
void validate_objective(const objective& f, std::size_t dimension, bool needs_hvp, std::string_view method);

// f(θ_0) and ∇f(θ_0) must be finite.
void validate_initial_point(double value, const_span gradient, std::string_view method);

}  // namespace flashsinkhorn::optim::detail
