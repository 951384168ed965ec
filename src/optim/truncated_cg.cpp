#include "optim/truncated_cg.hpp"

#include <cmath>

namespace flashsinkhorn::optim::detail {

truncated_cg_outcome truncated_cg(const hessian_product& hessian, const_span gradient, double eta, int max_iterations,
                                  negative_curvature_step policy, mutable_span step) {
  cg_recurrence cg(gradient, eta, step);
  const const_span direction = cg.direction();
  truncated_cg_outcome outcome;
  while (outcome.iterations < max_iterations) {
    const double curvature = cg.multiply(hessian);  // dᵀHd
    ++outcome.iterations;
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
    if (cg.advance(cg.step_length(curvature))) break;
  }
  return outcome;
}

}  // namespace flashsinkhorn::optim::detail
