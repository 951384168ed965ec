// Steihaug–Toint trust region; the iteration is described in
// include/flashsinkhorn/optim/trust_region.hpp.
#include "flashsinkhorn/optim/trust_region.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "optim/dense_model.hpp"
#include "optim/iteration_bookkeeping.hpp"
#include "optim/newton_state.hpp"
#include "optim/steihaug_cg.hpp"
#include "optim/trust_region_exact.hpp"
#include "optim/validate_options.hpp"

namespace flashsinkhorn::optim {
namespace {

// ρ = actual / predicted reduction. When both are below the resolution of f (a few ulps of |f|) the
// difference f(θ) − f(θ + s) is roundoff: the step is taken as predicted (ρ = 1) and the gradient
// test decides convergence, instead of shrinking Δ on noise.
double reduction_ratio(double value, double trial_value, double predicted) {
  if (!std::isfinite(trial_value)) return -std::numeric_limits<double>::infinity();
  const double actual = value - trial_value;
  const double resolution = 10 * std::numeric_limits<double>::epsilon() * std::fabs(value);
  if (std::fabs(actual) <= resolution && predicted <= resolution) return 1;
  if (predicted <= 0) return -std::numeric_limits<double>::infinity();
  return actual / predicted;
}

// The dense model's step (trust_region.hpp): the model at the iterate — formed by p products unless
// `model` already holds it (a rejected step's iterate, or options.initial_hessian) — then the exact
// subproblem. Reported as the CG's outcome, its iterations the products made.
detail::steihaug_outcome dense_model_step(detail::newton_state& state, detail::dense_model& model, double radius) {
  detail::steihaug_outcome outcome;
  if (model.empty()) {
    model = detail::form_dense_model(state.hessian, static_cast<int>(state.gradient.size()));
    outcome.iterations = model.size;
  }
  const detail::exact_step_outcome exact = detail::exact_trust_region_step(model, state.gradient, radius, state.step);
  outcome.negative_curvature = exact.negative_curvature;
  outcome.on_boundary = exact.on_boundary;
  outcome.model_decrease = exact.model_decrease;
  return outcome;
}

// One iteration from state.result at radius Δ: the step (Steihaug–Toint, or the dense model's when
// `model` is given: it holds the iterate's Hessian once formed, and is emptied when the iterate
// moves), the ratio test, the radius update and, when accepted, the new iterate; logged. Returns
// false (status set) when Δ < min_radius.
bool trust_region_iteration(detail::newton_state& state, const trust_region_options& options, double& radius,
                            detail::dense_model* model) {
  auto& [evaluate, gradient, step, trial, result, forcing, hessian] = state;
  if (radius < options.min_radius) {
    result.status = optimizer_status::trust_radius_too_small;
    return false;
  }
  optimizer_iteration record;
  record.iteration = ++result.iterations;
  record.forcing = forcing.eta();
  record.trust_radius = radius;
  const detail::steihaug_outcome inner =
      model != nullptr ? dense_model_step(state, *model, radius)
                       : detail::steihaug_cg(hessian, gradient, radius, forcing.eta(), options.max_cg_iterations, step);
  record.cg_iterations = inner.iterations;
  record.negative_curvature = inner.negative_curvature;

  detail::add_scaled(result.theta, 1, step, trial);
  const double trial_value = evaluate.trial_value(trial);
  const double rho = reduction_ratio(result.value, trial_value, inner.model_decrease);
  const double step_norm = detail::norm2(step);
  record.reduction_ratio = rho;

  // Radius update (Alg. 4.1).
  if (rho < options.shrink_below) {
    radius = options.shrink_factor * std::min(radius, step_norm);
  } else if (rho > options.expand_above && inner.on_boundary) {
    radius = std::min(options.expand_factor * radius, options.max_radius);
  }

  record.accepted = rho > options.acceptance_ratio;
  if (record.accepted) {
    std::swap(result.theta, trial);
    detail::evaluate_at_iterate(evaluate, result, gradient);
    if (model != nullptr) *model = {};  // another iterate, another Hessian
    forcing.accept(result.gradient_norm);
    record.step_size = 1;
    record.step_norm = step_norm;
  }
  detail::log_iteration(result, record, options.on_iteration);
  return true;
}

}  // namespace

optimizer_result trust_region(const objective& f, std::vector<double> theta0, const trust_region_options& options) {
  detail::validate(options);
  const int p = static_cast<int>(theta0.size());
  const bool dense = p <= options.dense_model_dimension;
  detail::dense_model model;
  if (dense && !options.initial_hessian.empty())
    model = detail::dense_model_of(options.initial_hessian, p, "trust_region_options.initial_hessian");
  const detail::wall_clock_budget budget(options.max_seconds);
  detail::newton_state state(f, std::move(theta0), options.forcing, options.gradient_tolerance, "trust_region");
  optimizer_result& result = state.result;

  double radius = options.initial_radius;
  while (!detail::stop_if_converged(result, options.gradient_tolerance) &&
         !detail::stop_if_out_of_iterations(result, options.max_iterations) &&
         !detail::stop_if_out_of_time(result, budget)) {
    double next_radius = radius;  // committed only by an iteration that completes
    detail::dense_model* dense_model = dense ? &model : nullptr;
    if (!detail::iterate_unless_stopped(state, [&] { return trust_region_iteration(state, options, next_radius, dense_model); }))
      break;
    radius = next_radius;
  }
  result.evaluations = state.evaluate.counts();
  result.trust_radius = radius;
  return std::move(result);
}

}  // namespace flashsinkhorn::optim
