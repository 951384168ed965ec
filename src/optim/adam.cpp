#include "flashsinkhorn/optim/adam.hpp"

#include <utility>

#include "optim/adam_state.hpp"
#include "optim/evaluator.hpp"
#include "optim/validate_options.hpp"

namespace flashsinkhorn::optim {

optimizer_result adam(const objective& f, std::vector<double> theta0, const adam_options& options) {
  detail::validate(options);
  detail::validate_objective(f, theta0.size(), false, "adam");
  const std::size_t p = theta0.size();
  detail::evaluator evaluate(f, p);

  optimizer_result result;
  result.theta = std::move(theta0);
  detail::host_vector gradient(p);
  result.value = evaluate.value_and_gradient(result.theta, gradient);
  detail::validate_initial_point(result.value, gradient, "adam");
  result.gradient_norm = detail::norm2(gradient);
  detail::adam_state state(options, p);

  while (true) {
    if (result.gradient_norm <= options.gradient_tolerance) {
      result.status = optimizer_status::converged;
      break;
    }
    if (result.iterations == options.max_iterations) {
      result.status = optimizer_status::max_iterations;
      break;
    }
    optimizer_iteration record;
    record.iteration = ++result.iterations;
    record.step_norm = state.step(gradient, result.theta);
    record.step_size = options.learning_rate;
    result.value = evaluate.value_and_gradient(result.theta, gradient);
    result.gradient_norm = detail::norm2(gradient);
    record.value = result.value;
    record.gradient_norm = result.gradient_norm;
    result.history.push_back(record);
    if (options.on_iteration) options.on_iteration(record);
  }
  result.evaluations = evaluate.counts();
  return result;
}

}  // namespace flashsinkhorn::optim
