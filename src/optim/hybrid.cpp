// Adam → second-order hybrid; the policy is described in include/flashsinkhorn/optim/hybrid.hpp.
#include "flashsinkhorn/optim/hybrid.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>

#include "flashsinkhorn/error.hpp"

#include "optim/adam_state.hpp"
#include "optim/dense_check.hpp"
#include "optim/evaluator.hpp"
#include "optim/iteration_bookkeeping.hpp"
#include "optim/lanczos_start.hpp"
#include "optim/validate_options.hpp"

namespace flashsinkhorn::optim {
namespace {

// Weight of the random part of a warm Lanczos start (hybrid.hpp): lanczos_options::start_noise.
constexpr double kWarmStartNoise = 1e-2;

// A check's Lanczos settings: smallest, stopped below −negative_tolerance, seeded by the check's
// index, warm from `ritz_vector` (the last check's y_min; empty at first) when warm_lanczos.
lanczos_options check_lanczos(const hybrid_options& options, int check_index, const std::vector<double>& ritz_vector) {
  lanczos_options lanczos = options.lanczos;
  lanczos.target = lanczos_target::smallest;
  lanczos.stop_below = -options.negative_tolerance;
  lanczos.seed = options.lanczos.seed + static_cast<std::uint64_t>(check_index);
  if (options.warm_lanczos && !ritz_vector.empty()) {
    lanczos.start = ritz_vector;
    lanczos.start_noise = kWarmStartNoise;
  }
  return lanczos;
}

// λ_min(∇²f(θ)) by Lanczos, stopped early once certainly below −negative_tolerance; `ritz_vector`
// (the last run's y_min, empty at first) is the warm start and receives this run's.
lambda_sample estimate_lambda_min(detail::evaluator& evaluate, const_span theta, const hybrid_options& options,
                                  int adam_steps, int check_index, std::vector<double>& ritz_vector) {
  const lanczos_options lanczos = check_lanczos(options, check_index, ritz_vector);
  const symmetric_operator hessian = [&](const_span v, mutable_span product) { evaluate.hvp(theta, v, product); };
  lanczos_result estimate = lanczos_extremes(hessian, static_cast<int>(theta.size()), lanczos);
  ritz_vector = std::move(estimate.ritz_vector_min);

  lambda_sample sample;
  sample.iteration = adam_steps;
  sample.lambda_min = estimate.lambda_min;
  sample.residual = estimate.residual_min;
  sample.lanczos_steps = estimate.steps;
  sample.converged = estimate.converged || estimate.invariant_subspace;
  sample.certified_negative = estimate.stopped_below;
  return sample;
}

// The check with the dense model (hybrid.hpp, dense_check.hpp): one or two Lanczos products certify
// a clearly negative λ_min; otherwise ∇²f(θ) by p products in all and its exact λ_min (residual 0),
// whose matrix `hessian` receives — the trust region's first model when this check decides the
// switch (emptied by a certified check). `ritz_vector`: the warm start, then this check's y_min.
lambda_sample dense_lambda_min(detail::evaluator& evaluate, const_span theta, const hybrid_options& options,
                               int adam_steps, int check_index, std::vector<double>& ritz_vector,
                               std::vector<double>& hessian) {
  const detail::hessian_product product = [&](const_span v, mutable_span out) { evaluate.hvp(theta, v, out); };
  const int p = static_cast<int>(theta.size());
  const detail::host_vector start = detail::lanczos_start_vector(check_lanczos(options, check_index, ritz_vector), p);
  detail::dense_check_outcome check = detail::dense_check(product, start, options.negative_tolerance);
  ritz_vector = std::move(check.ritz_vector);
  hessian = std::move(check.model.hessian);
  lambda_sample sample;
  sample.iteration = adam_steps;
  sample.lambda_min = check.lambda_min;
  sample.residual = check.residual;
  sample.lanczos_steps = check.products;
  sample.converged = !check.model.empty();  // exact; a certified one stopped early, as Lanczos' does
  sample.certified_negative = check.certified_negative;
  return sample;
}

// Whether the checks and the trust region use the dense model: p ≤ its dimension, trust region.
bool uses_dense_model(const hybrid_options& options, std::size_t p) {
  return options.second_order == second_order_method::trust_region &&
         static_cast<std::int64_t>(p) <= options.trust_region.dense_model_dimension;
}

// Positive definite with margin: some eigenvalue lies within the residual bound of θ_min, so require
// θ_min − residual above the threshold, and a converged estimate.
bool positive_enough(const lambda_sample& sample, double switch_threshold) {
  return sample.converged && !sample.certified_negative && sample.lambda_min - sample.residual > switch_threshold;
}

// The second-order method from θ within `seconds_left` of the run's budget (and its own). With nothing
// left (the λ_min check that decided the switch spent it) it evaluates θ and stops: time_limit.
optimizer_result second_order_phase(const objective& f, const std::vector<double>& theta, const hybrid_options& options,
                                    double seconds_left, std::vector<double> switch_hessian) {
  const double seconds = std::max(seconds_left, std::numeric_limits<double>::min());
  if (options.second_order == second_order_method::newton_cg) {
    newton_cg_options newton = options.newton_cg;
    newton.max_seconds = std::min(newton.max_seconds, seconds);
    return newton_cg(f, theta, newton);
  }
  trust_region_options region = options.trust_region;
  region.max_seconds = std::min(region.max_seconds, seconds);
  if (options.resume.trust_radius > 0) region.initial_radius = std::min(options.resume.trust_radius, region.max_radius);
  if (!switch_hessian.empty()) region.initial_hessian = std::move(switch_hessian);
  return trust_region(f, theta, region);
}

// The second-order phase stopped by a callback in its first evaluation, at the switch point θ: no
// iteration made, no trust radius reached (a continuation starts the method afresh from θ).
optimizer_result stopped_at_start(const optimizer_result& adam_phase) {
  optimizer_result phase;
  phase.theta = adam_phase.theta;
  phase.value = adam_phase.value;
  phase.gradient_norm = adam_phase.gradient_norm;
  phase.status = optimizer_status::stopped;
  return phase;
}

// Whether a λ_min check is due at Adam step `iterations`, where ‖∇f‖ = `gradient_norm`: inside the
// gradient gate and, after the check of step `last_check` (−1: none yet), check_every steps on. Ungated,
// checks fall on the multiples of check_every (step 0 included); a run stopped after a check but
// before its Adam step resumes without repeating it.
bool check_due(int iterations, double gradient_norm, int last_check, const hybrid_options& options) {
  if (options.check_at_start && iterations == 0 && last_check < 0) return true;  // θ_0, whatever the gate
  return gradient_norm <= options.check_gradient_norm &&
         (last_check < 0 || iterations - last_check >= options.check_every);
}

void add_counts(evaluation_counts& total, const evaluation_counts& more) {
  total.values += more.values;
  total.gradients += more.gradients;
  total.hvps += more.hvps;
}

}  // namespace

hybrid_result hybrid(const objective& f, std::vector<double> theta0, const hybrid_options& options) {
  detail::validate(options);
  detail::validate_objective(f, theta0.size(), true, "hybrid");
  const detail::wall_clock_budget budget(options.max_seconds);
  const detail::wall_clock_budget adam_budget(options.adam.max_seconds);
  const std::size_t p = theta0.size();
  detail::evaluator evaluate(f, p);

  hybrid_result result;
  optimizer_result& adam_phase = result.adam_phase;
  detail::host_vector gradient(p);
  adam_phase = detail::start_at(evaluate, std::move(theta0), gradient, "hybrid");
  const hybrid_state& resume = options.resume;
  detail::adam_state adam(options.adam, p, resume.adam);
  adam_phase.iterations = adam.steps();  // a resumed run numbers its Adam steps on

  bool switched = resume.switch_iteration >= 0;
  int check_index = resume.checks;
  int last_check = resume.last_check;
  std::vector<double> ritz_vector = resume.ritz_vector;  // the last check's y_min: the next one's warm start
  const bool dense = uses_dense_model(options, p);
  std::vector<double> check_hessian;  // the last dense check's ∇²f(θ): the trust region's first model
  if (!ritz_vector.empty() && ritz_vector.size() != p)
    throw invalid_argument("hybrid_options.resume.ritz_vector: " + std::to_string(ritz_vector.size()) +
                           " values for " + std::to_string(p) + " parameters");
  while (!switched) {
    if (detail::stop_if_converged(adam_phase, options.adam.gradient_tolerance)) break;
    if (detail::stop_if_out_of_time(adam_phase, budget) || detail::stop_if_out_of_time(adam_phase, adam_budget)) break;
    if (check_due(adam_phase.iterations, adam_phase.gradient_norm, last_check, options)) {
      try {
        result.lambda_trace.push_back(
            dense ? dense_lambda_min(evaluate, adam_phase.theta, options, adam_phase.iterations, check_index,
                                     ritz_vector, check_hessian)
                  : estimate_lambda_min(evaluate, adam_phase.theta, options, adam_phase.iterations, check_index,
                                        ritz_vector));
      } catch (const stop_requested&) {  // the check is dropped: a resumed run makes it again
        adam_phase.status = optimizer_status::stopped;
        break;
      }
      ++check_index;
      last_check = adam_phase.iterations;
      if (positive_enough(result.lambda_trace.back(), options.switch_threshold)) {
        switched = true;
        break;
      }
    }
    if (detail::stop_if_out_of_iterations(adam_phase, options.adam.max_iterations)) break;
    if (!detail::adam_iteration_unless_stopped(adam, evaluate, options.adam, adam_phase, gradient)) break;
  }
  adam_phase.evaluations = evaluate.counts();
  result.evaluations = evaluate.counts();

  const optimizer_result* last_phase = &adam_phase;
  if (switched) {
    result.switch_iteration = resume.switch_iteration >= 0 ? resume.switch_iteration : adam_phase.iterations;
    try {
      // A switch made in this run follows the check at this θ; a resumed one has no Hessian kept.
      result.second_order_phase = second_order_phase(f, adam_phase.theta, options, budget.left(),
                                                     resume.switch_iteration >= 0 ? std::vector<double>{} : check_hessian);
    } catch (const stop_requested&) {  // in its first evaluation: the continuation starts the phase again
      result.second_order_phase = stopped_at_start(adam_phase);
    }
    add_counts(result.evaluations, result.second_order_phase.evaluations);
    last_phase = &result.second_order_phase;
  }
  result.theta = last_phase->theta;
  result.value = last_phase->value;
  result.gradient_norm = last_phase->gradient_norm;
  result.status = last_phase->status;
  result.state.adam = adam.moments();
  result.state.ritz_vector = std::move(ritz_vector);
  result.state.checks = check_index;
  result.state.last_check = last_check;
  result.state.switch_iteration = result.switch_iteration;
  result.state.trust_radius = switched ? result.second_order_phase.trust_radius : 0.0;
  return result;
}

}  // namespace flashsinkhorn::optim
