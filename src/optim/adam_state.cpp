#include "optim/adam_state.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "flashsinkhorn/error.hpp"

#include "optim/iteration_bookkeeping.hpp"

namespace flashsinkhorn::optim::detail {

adam_state::adam_state(const adam_options& options, std::size_t dimension, const adam_moments& initial)
    : options_(options), first_moment_(dimension, 0.0), second_moment_(dimension, 0.0), steps_(initial.steps) {
  const std::string where = "adam_moments (a resumed Adam state)";
  if (initial.steps < 0) throw invalid_argument(where + ": steps must be ≥ 0, got " + std::to_string(initial.steps));
  if (initial.first.empty() && initial.second.empty()) return;
  if (initial.first.size() != dimension || initial.second.size() != dimension) {
    throw invalid_argument(where + ": first and second need " + std::to_string(dimension) + " values each, got " +
                           std::to_string(initial.first.size()) + " and " + std::to_string(initial.second.size()));
  }
  for (std::size_t i = 0; i < dimension; ++i) {
    if (!std::isfinite(initial.first[i]) || !std::isfinite(initial.second[i]) || initial.second[i] < 0)
      throw invalid_argument(where + ": entry " + std::to_string(i) + " is not finite (or v < 0)");
  }
  std::copy(initial.first.begin(), initial.first.end(), first_moment_.begin());
  std::copy(initial.second.begin(), initial.second.end(), second_moment_.begin());
}

double adam_state::step(const_span gradient, mutable_span theta) {
  ++steps_;
  const double k = steps_;
  const double bias1 = 1 - std::pow(options_.beta1, k);           // 1 − β₁^k
  const double root_bias2 = std::sqrt(1 - std::pow(options_.beta2, k));  // √(1 − β₂^k)
  return adam_update(gradient, options_.beta1, options_.beta2, options_.learning_rate * root_bias2 / bias1,
                     options_.epsilon * root_bias2, first_moment_, second_moment_, theta);
}

void adam_iteration(adam_state& state, evaluator& evaluate, const adam_options& options, optimizer_result& result,
                    mutable_span gradient) {
  optimizer_iteration record;
  record.iteration = ++result.iterations;
  record.step_norm = state.step(gradient, result.theta);
  record.step_size = options.learning_rate;
  evaluate_at_iterate(evaluate, result, gradient);
  log_iteration(result, record, options.on_iteration);
}

bool adam_iteration_unless_stopped(adam_state& state, evaluator& evaluate, const adam_options& options,
                                   optimizer_result& result, mutable_span gradient) {
  const iterate_checkpoint checkpoint(result, gradient);
  const adam_state before = state;
  try {
    adam_iteration(state, evaluate, options, result, gradient);
    return true;
  } catch (const stop_requested&) {
    checkpoint.restore(result, gradient);
    state = before;
    return false;
  }
}

}  // namespace flashsinkhorn::optim::detail
