#include "optim/adam_state.hpp"

#include <cmath>

#include "optim/iteration_bookkeeping.hpp"

namespace flashsinkhorn::optim::detail {

adam_state::adam_state(const adam_options& options, std::size_t dimension)
    : options_(options), first_moment_(dimension, 0.0), second_moment_(dimension, 0.0) {}

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

}  // namespace flashsinkhorn::optim::detail
