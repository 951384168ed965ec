#include "optim/steihaug_cg.hpp"

#include <cmath>

namespace flashsinkhorn::optim::detail {
namespace {

// The τ ≥ 0 with ‖s + τd‖ = Δ, for ‖s‖ ≤ Δ: the positive root of ‖d‖²τ² + 2sᵀdτ + ‖s‖² − Δ² = 0,
// written without cancellation.
double boundary_step(const_span s, const_span d, double radius) {
  const double dd = dot(d, d);
  const double sd = dot(s, d);
  const double gap = std::fmax(radius * radius - dot(s, s), 0.0);
  const double root = std::sqrt(sd * sd + dd * gap);
  return sd > 0 ? gap / (sd + root) : (root - sd) / dd;
}

}  // namespace

steihaug_outcome steihaug_cg(const hessian_product& hessian, const_span gradient, double radius, double eta,
                             int max_iterations, mutable_span step) {
  host_vector hessian_step(gradient.size(), 0.0);  // H s, for m(s)
  cg_recurrence cg(gradient, eta, step);
  const const_span direction = cg.direction();
  const const_span hessian_direction = cg.hessian_direction();
  steihaug_outcome outcome;
  while (outcome.iterations < max_iterations) {
    const double curvature = cg.multiply(hessian);  // dᵀHd
    ++outcome.iterations;
    const double step_length = cg.step_length(curvature);
    // ‖s + αd‖² = ‖s‖² + 2α sᵀd + α²‖d‖².
    const double next_norm_squared = dot(step, step) + step_length * (2 * dot(step, direction) +
                                                                      step_length * dot(direction, direction));
    const bool leaves_ball = curvature <= 0 || next_norm_squared >= radius * radius;
    if (leaves_ball) {
      outcome.negative_curvature = curvature <= 0;
      outcome.on_boundary = true;
      const double tau = boundary_step(step, direction, radius);
      axpy(tau, direction, step);
      axpy(tau, hessian_direction, hessian_step);
      break;
    }
    axpy(step_length, hessian_direction, hessian_step);
    if (cg.advance(step_length)) break;
  }
  outcome.model_decrease = -dot(gradient, step) - 0.5 * dot(step, hessian_step);
  return outcome;
}

}  // namespace flashsinkhorn::optim::detail
