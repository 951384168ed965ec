// The conjugate-gradient recurrence on H s = −g from s = 0 (Nocedal & Wright Alg. 5.2), the part
// truncated_cg (Newton-CG) and steihaug_cg (trust region) share; each decides, from the curvature
// dᵀHd of the current direction, whether to take the CG step or leave the loop its own way.
//
// State after j steps: s_j (the caller's `step`), r_j = H s_j + g, d_j; initially s = 0, r = g, d = −g.
// One step: α_j = r_jᵀr_j / d_jᵀHd_j, s ← s + α_j d_j, r ← r + α_j Hd_j, then (unless ‖r‖ ≤ η‖g‖)
// d ← −r + β d with β = r_{j+1}ᵀr_{j+1} / r_jᵀr_j.
#pragma once

#include <functional>

#include "optim/vector_ops.hpp"

namespace flashsinkhorn::optim::detail {

using hessian_product = std::function<void(const_span v, mutable_span product)>;

class cg_recurrence {
 public:
  // Sets `step` to 0; it is the iterate s_j from then on (the caller may also move it itself).
  cg_recurrence(const_span gradient, double eta, mutable_span step);

  // Computes H d_j (one Hessian-vector product) and returns the curvature d_jᵀHd_j.
  double multiply(const hessian_product& hessian);
  // α_j = r_jᵀr_j / d_jᵀHd_j.
  [[nodiscard]] double step_length(double curvature) const noexcept { return residual_squared_ / curvature; }
  // s ← s + αd, r ← r + αHd. Returns true when ‖r‖ ≤ η‖g‖ (solved); otherwise turns d into the next
  // conjugate direction and returns false.
  bool advance(double step_length);

  [[nodiscard]] const_span direction() const noexcept { return direction_; }
  [[nodiscard]] const_span hessian_direction() const noexcept { return hessian_direction_; }

 private:
  mutable_span step_;
  host_vector residual_;           // r = H s + g
  host_vector direction_;          // d
  host_vector hessian_direction_;  // H d
  double residual_squared_ = 0;    // rᵀr
  double stop_norm_ = 0;           // η‖g‖
};

}  // namespace flashsinkhorn::optim::detail
