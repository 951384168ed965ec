#include "optim/iteration_bookkeeping.hpp"

#include <utility>

#include "optim/validate_options.hpp"

namespace flashsinkhorn::optim::detail {

optimizer_result start_at(evaluator& evaluate, std::vector<double> theta0, mutable_span gradient,
                          std::string_view method) {
  optimizer_result result;
  result.theta = std::move(theta0);
  result.value = evaluate.value_and_gradient(result.theta, gradient);
  validate_initial_point(result.value, gradient, method);
  result.gradient_norm = norm2(gradient);
  return result;
}

bool stop_if_converged(optimizer_result& result, double gradient_tolerance) {
  if (result.gradient_norm <= gradient_tolerance) {  // false for NaN: a NaN norm never converges
    result.status = optimizer_status::converged;
    return true;
  }
  return false;
}

bool stop_if_out_of_iterations(optimizer_result& result, int max_iterations) {
  if (result.iterations == max_iterations) {
    result.status = optimizer_status::max_iterations;
    return true;
  }
  return false;
}

bool stop_if_out_of_time(optimizer_result& result, const wall_clock_budget& budget) {
  if (budget.spent()) {
    result.status = optimizer_status::time_limit;
    return true;
  }
  return false;
}

void evaluate_at_iterate(evaluator& evaluate, optimizer_result& result, mutable_span gradient) {
  result.value = evaluate.value_and_gradient(result.theta, gradient);
  result.gradient_norm = norm2(gradient);
}

iterate_checkpoint::iterate_checkpoint(const optimizer_result& result, const_span gradient)
    : theta_(result.theta),
      gradient_(gradient.begin(), gradient.end()),
      value_(result.value),
      gradient_norm_(result.gradient_norm),
      iterations_(result.iterations),
      history_size_(result.history.size()) {}

void iterate_checkpoint::restore(optimizer_result& result, mutable_span gradient) const {
  result.theta = theta_;
  copy(gradient_, gradient);
  result.value = value_;
  result.gradient_norm = gradient_norm_;
  result.iterations = iterations_;
  result.history.resize(history_size_);
  result.status = optimizer_status::stopped;
}

void log_iteration(optimizer_result& result, optimizer_iteration record, const iteration_callback& on_iteration) {
  record.value = result.value;
  record.gradient_norm = result.gradient_norm;
  result.history.push_back(record);
  if (on_iteration) on_iteration(record);
}

}  // namespace flashsinkhorn::optim::detail
