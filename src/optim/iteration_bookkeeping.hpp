// The bookkeeping every iterative optimiser (adam, newton_cg, trust_region, the hybrid's Adam
// phase) does around its own step: start at θ₀, the shared stopping tests, re-evaluation at a new
// iterate, and the per-iteration record (report.hpp).
#pragma once

#include <cstddef>
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

// The last accepted iterate as an iteration finds it, put back when a callback stops the run during
// that iteration (stop_requested, objective.hpp): θ, f(θ), ∇f(θ), the iteration count and the length
// of the history. The method's own state (moments, radius) it keeps beside this.
class iterate_checkpoint {
 public:
  iterate_checkpoint(const optimizer_result& result, const_span gradient);
  // result and `gradient` as they were at construction; status stopped.
  void restore(optimizer_result& result, mutable_span gradient) const;

 private:
  std::vector<double> theta_, gradient_;
  double value_, gradient_norm_;
  int iterations_;
  std::size_t history_size_;
};

// Completes `record` with the iterate's value and gradient norm, appends it to the history and
// passes it to `on_iteration` (when set).
void log_iteration(optimizer_result& result, optimizer_iteration record, const iteration_callback& on_iteration);

}  // namespace flashsinkhorn::optim::detail
