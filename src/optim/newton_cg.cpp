// Line-search Newton-CG; the iteration is described in include/flashsinkhorn/optim/newton_cg.hpp.
#include "flashsinkhorn/optim/newton_cg.hpp"

#include <utility>

#include "optim/armijo_search.hpp"
#include "optim/evaluator.hpp"
#include "optim/forcing_sequence.hpp"
#include "optim/truncated_cg.hpp"
#include "optim/validate_options.hpp"

namespace flashsinkhorn::optim {

optimizer_result newton_cg(const objective& f, std::vector<double> theta0, const newton_cg_options& options) {
  detail::validate(options);
  detail::validate_objective(f, theta0.size(), true, "newton_cg");
  const std::size_t p = theta0.size();
  detail::evaluator evaluate(f, p);

  optimizer_result result;
  result.theta = std::move(theta0);
  detail::host_vector gradient(p), step(p), trial(p);
  result.value = evaluate.value_and_gradient(result.theta, gradient);
  detail::validate_initial_point(result.value, gradient, "newton_cg");
  result.gradient_norm = detail::norm2(gradient);
  detail::forcing_sequence forcing(options.forcing, options.gradient_tolerance, result.gradient_norm);
  const detail::hessian_product hessian = [&](const_span v, mutable_span product) {
    evaluate.hvp(result.theta, v, product);
  };

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
      record.value = result.value;
      record.gradient_norm = result.gradient_norm;
      result.history.push_back(record);
      if (options.on_iteration) options.on_iteration(record);
      result.status = optimizer_status::line_search_failed;
      break;
    }
    std::swap(result.theta, trial);
    result.value = evaluate.value_and_gradient(result.theta, gradient);
    result.gradient_norm = detail::norm2(gradient);
    forcing.accept(result.gradient_norm);

    record.value = result.value;
    record.gradient_norm = result.gradient_norm;
    record.step_size = search.step_size;
    record.step_norm = search.step_size * detail::norm2(step);
    result.history.push_back(record);
    if (options.on_iteration) options.on_iteration(record);
  }
  result.evaluations = evaluate.counts();
  return result;
}

}  // namespace flashsinkhorn::optim
