// Line-search Newton-CG; the iteration is described in include/flashsinkhorn/optim/newton_cg.hpp.
#include "flashsinkhorn/optim/newton_cg.hpp"

#include <utility>

#include "optim/armijo_search.hpp"
#include "optim/iteration_bookkeeping.hpp"
#include "optim/newton_state.hpp"
#include "optim/truncated_cg.hpp"
#include "optim/validate_options.hpp"

namespace flashsinkhorn::optim {
namespace {

// One iteration from state.result: the truncated-CG step, the Armijo search and the new iterate,
// logged. Returns false when the line search failed (status set, the iterate unchanged).
bool newton_iteration(detail::newton_state& state, const newton_cg_options& options) {
  auto& [evaluate, gradient, step, trial, result, forcing, hessian] = state;
  optimizer_iteration record;
  record.iteration = ++result.iterations;
  record.forcing = forcing.eta();
  const detail::truncated_cg_outcome inner = detail::truncated_cg(
      hessian, gradient, forcing.eta(), options.max_cg_iterations, options.on_negative_curvature, step);
  record.cg_iterations = inner.iterations;
  record.negative_curvature = inner.negative_curvature;

  const double slope = detail::dot(gradient, step);  // gᵀs ≤ 0
  const detail::armijo_outcome search =
      detail::armijo_search(evaluate, result.theta, result.value, slope, step, options.armijo_c1,
                            options.backtrack_factor, options.max_backtracks, trial);
  if (!search.found) {
    detail::log_iteration(result, record, options.on_iteration);
    result.status = optimizer_status::line_search_failed;
    return false;
  }
  std::swap(result.theta, trial);
  detail::evaluate_at_iterate(evaluate, result, gradient);
  forcing.accept(result.gradient_norm);

  record.step_size = search.step_size;
  record.step_norm = search.step_size * detail::norm2(step);
  detail::log_iteration(result, record, options.on_iteration);
  return true;
}

}  // namespace

optimizer_result newton_cg(const objective& f, std::vector<double> theta0, const newton_cg_options& options) {
  detail::validate(options);
  const detail::wall_clock_budget budget(options.max_seconds);
  detail::newton_state state(f, std::move(theta0), options.forcing, options.gradient_tolerance, "newton_cg");
  optimizer_result& result = state.result;

  while (!detail::stop_if_converged(result, options.gradient_tolerance) &&
         !detail::stop_if_out_of_iterations(result, options.max_iterations) &&
         !detail::stop_if_out_of_time(result, budget)) {
    if (!detail::iterate_unless_stopped(state, [&] { return newton_iteration(state, options); })) break;
  }
  result.evaluations = state.evaluate.counts();
  return std::move(result);
}

}  // namespace flashsinkhorn::optim
