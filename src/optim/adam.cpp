#include "flashsinkhorn/optim/adam.hpp"

#include <utility>

#include "optim/adam_state.hpp"
#include "optim/evaluator.hpp"
#include "optim/iteration_bookkeeping.hpp"
#include "optim/validate_options.hpp"

namespace flashsinkhorn::optim {

adam_result adam(const objective& f, std::vector<double> theta0, const adam_options& options) {
  detail::validate(options);
  detail::validate_objective(f, theta0.size(), false, "adam");
  const detail::wall_clock_budget budget(options.max_seconds);
  const std::size_t p = theta0.size();
  detail::evaluator evaluate(f, p);

  detail::host_vector gradient(p);
  detail::adam_state state(options, p, options.initial);
  adam_result result;
  static_cast<optimizer_result&>(result) = detail::start_at(evaluate, std::move(theta0), gradient, "adam");
  result.iterations = state.steps();  // a resumed run numbers its steps on

  while (!detail::stop_if_converged(result, options.gradient_tolerance) &&
         !detail::stop_if_out_of_iterations(result, options.max_iterations) &&
         !detail::stop_if_out_of_time(result, budget)) {
    if (!detail::adam_iteration_unless_stopped(state, evaluate, options, result, gradient)) break;
  }
  result.evaluations = evaluate.counts();
  result.moments = state.moments();
  return result;
}

}  // namespace flashsinkhorn::optim
