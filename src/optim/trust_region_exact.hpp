// The trust-region subproblem solved exactly on a dense model (Moré & Sorensen 1983; Nocedal &
// Wright §4.3): min m(s) = gᵀs + ½sᵀHs over ‖s‖ ≤ Δ. In H's eigenbasis (H = Q diag(λ) Qᵀ,
// λ₁ ≤ … ≤ λ_p, g̃ = Qᵀg) the minimiser is s(σ) = −(H + σI)⁻¹g, s̃_k = −g̃_k/(λ_k + σ), for the σ ≥
// max(0, −λ₁) with σ(Δ − ‖s(σ)‖) = 0:
//   interior   λ₁ > 0 and ‖H⁻¹g‖ ≤ Δ: σ = 0, the Newton step;
//   boundary   else ‖s(σ)‖ = Δ, σ > max(0, −λ₁): ‖s(σ)‖ falls monotonically from +∞ (or from ‖s‖ at
//              the lower end) to 0, found by bisection to float64 resolution (p is small);
//   hard case  λ₁ ≤ 0, g with no component on λ₁'s eigenspace and ‖s(−λ₁)‖ ≤ Δ (that space's part
//              left out): s = s(−λ₁) + τq₁ with ‖s‖ = Δ, τ of the sign that makes τ·g̃₁ ≤ 0.
#pragma once

#include "optim/dense_model.hpp"

namespace flashsinkhorn::optim::detail {

struct exact_step_outcome {
  bool negative_curvature = false;  // λ₁ ≤ 0
  bool on_boundary = false;         // ‖s‖ = Δ
  double shift = 0;                 // σ
  double model_decrease = 0;        // m(0) − m(s) ≥ 0
};

// step: output, model.size values.
exact_step_outcome exact_trust_region_step(const dense_model& model, const_span gradient, double radius,
                                           mutable_span step);

}  // namespace flashsinkhorn::optim::detail
