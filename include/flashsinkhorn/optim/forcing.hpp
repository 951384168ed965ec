// How accurately Newton-CG and the trust region solve the Newton system H s = −g at each step: the
// inner CG stops when ‖H s + g‖ ≤ η_k‖g‖. η_k follows Eisenstat and Walker's choice 2
// (SIAM J. Sci. Comput. 17, 1996), which makes the outer iteration converge with order `exponent`:
//   η_0 = initial,
//   η_k = gamma·(‖g_k‖/‖g_{k−1}‖)^exponent,
//   safeguards: η_k ← max(η_k, gamma·η_{k−1}^exponent) when gamma·η_{k−1}^exponent > 0.1 (do not drop
//   η faster than the convergence justifies); η_k ← max(η_k, 0.5·gradient_tolerance/‖g_k‖) (do not
//   solve below what the outer stopping test needs); η_k ← min(η_k, maximum).
// For an exact inner solve (a quadratic in one Newton step) set maximum to a tiny value (1e-12).
#pragma once

namespace flashsinkhorn::optim {

struct forcing_options {
  double initial = 0.5;                   // η_0 ∈ (0, 1)
  double maximum = 0.9;                   // η_max ∈ (0, 1): upper bound of every η_k
  double gamma = 0.9;                     // ∈ (0, 1]
  double exponent = 1.6180339887498949;   // ∈ (1, 2]: (1 + √5)/2, Eisenstat–Walker's choice
};

}  // namespace flashsinkhorn::optim
