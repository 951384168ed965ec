#include "optim/truncated_cg.hpp"

#include <cmath>

namespace flashsinkhorn::optim::detail {

truncated_cg_outcome truncated_cg(const hessian_product& hessian, const_span gradient, double eta, int max_iterations,
                                  negative_curvature_step policy, mutable_span step) {
  const std::size_t p = gradient.size();
  host_vector residual(gradient.begin(), gradient.end());  // r = H s + g, s = 0
  host_vector direction(p);                                // d = −r
  host_vector hessian_direction(p);                        // H d
  copy(gradient, direction);
  scale(-1, direction);
  fill(0, step);

  const double stop_norm = eta * norm2(gradient);
  double residual_squared = dot(residual, residual);
  truncated_cg_outcome outcome;
  while (outcome.iterations < max_iterations) {
    hessian(direction, hessian_direction);
    ++outcome.iterations;
    const double curvature = dot(direction, hessian_direction);  // dᵀHd
    if (curvature <= 0) {
      outcome.negative_curvature = true;
      const bool first_direction = outcome.iterations == 1;
      if (policy == negative_curvature_step::curvature_direction) {
        // s ← s_j + (|dᵀHd|/‖d‖²)·d/‖d‖, d oriented so gᵀd ≤ 0 (for CG gᵀd_j = −‖r_j‖² < 0 already):
        // along d the model falls without bound, and the step moves as far as the curvature is strong.
        const double direction_norm = norm2(direction);
        const double length = std::fabs(curvature) / (direction_norm * direction_norm);
        const double sign = dot(gradient, direction) > 0 ? -1.0 : 1.0;
        axpy(sign * length / direction_norm, direction, step);
        // A zero-curvature first direction gives s = 0: fall back to the steepest-descent choice.
        if (!first_direction || length > 0) return outcome;
      }
      if (first_direction) copy(direction, step);  // −g; otherwise keep the CG iterate s_j
      return outcome;
    }
    const double step_length = residual_squared / curvature;  // α_j = rᵀr / dᵀHd
    axpy(step_length, direction, step);
    axpy(step_length, hessian_direction, residual);
    const double next_residual_squared = dot(residual, residual);
    if (std::sqrt(next_residual_squared) <= stop_norm) break;
    // d ← −r + βd, β = r_{j+1}ᵀr_{j+1} / r_jᵀr_j.
    negxpby(residual, next_residual_squared / residual_squared, direction);
    residual_squared = next_residual_squared;
  }
  return outcome;
}

}  // namespace flashsinkhorn::optim::detail
