// The bookkeeping every iterative optimiser (adam, newton_cg, trust_region, the hybrid's Adam
// phase) does around its own step: start at θ₀, the shared stopping tests, re-evaluation at a new
// iterate, and the per-iteration record (report.hpp).
#pragma once

#include <string_view>
#include <vector>

#include "flashsinkhorn/optim/report.hpp"
#include "optim/evaluator.hpp"
#include "optim/wall_clock_budget.hpp"

namespace flashsinkhorn::optim::detail {

// A result at θ₀: theta, value = f(θ₀), gradient_norm = ‖∇f(θ₀)‖₂; `gradient` receives ∇f(θ₀).
// Throws (validate_initial_point) when f(θ₀) or ∇f(θ₀) is not finite; `method` names the caller.
[[nodiscard]] optimizer_result start_at(evaluator& evaluate, std::vector<double> theta0, mutable_span gradient,
                                        std::string_view method);

// ‖∇f(θ)‖₂ ≤ gradient_tolerance: sets status converged and returns true.
bool stop_if_converged(optimizer_result& result, double gradient_tolerance);
// The iteration budget is spent: sets status max_iterations and returns true.
bool stop_if_out_of_iterations(optimizer_result& result, int max_iterations);
// The wall-time budget is spent: sets status time_limit and returns true.
bool stop_if_out_of_time(optimizer_result& result, const wall_clock_budget& budget);

// result.theta has just become the new iterate: value, `gradient` and gradient_norm there.
void evaluate_at_iterate(evaluator& evaluate, optimizer_result& result, mutable_span gradient);

// Completes `record` with the iterate's value and gradient norm, appends it to the history and
// passes it to `on_iteration` (when set).
void log_iteration(optimizer_result& result, optimizer_iteration record, const iteration_callback& on_iteration);

}  // namespace flashsinkhorn::optim::detail
