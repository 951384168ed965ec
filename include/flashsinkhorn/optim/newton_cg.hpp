// Truncated Newton (line-search Newton-CG, Nocedal & Wright Alg. 7.1), matrix-free: the Hessian is
// seen only through objective.hvp.
//
// Iteration k, at θ_k with g_k = ∇f(θ_k), H_k = ∇²f(θ_k):
//   1. Inner CG on H_k s = −g_k from s = 0, stopped at ‖H_k s + g_k‖ ≤ η_k‖g_k‖ (η_k: forcing.hpp),
//      or max_cg_iterations, or when a CG direction d has dᵀH_k d ≤ 0 (negative curvature):
//      - steepest_descent: keep the CG iterate s_j so far (−g_k if d is the first direction);
//      - curvature_direction: s = s_j + (|dᵀHd|/‖d‖²)·d/‖d‖, d oriented so that g_kᵀd ≤ 0: the CG
//        iterate plus a step along the negative-curvature direction as long as the curvature is
//        strong (the scaling of Royer, O'Neill & Wright, Math. Prog. 2020). It leaves a saddle at
//        once where steepest descent from a tiny gradient needs many steps.
//      Every CG iterate is a descent direction (g_kᵀs < 0), so s is one.
//   2. Backtracking Armijo line search: α = 1, ½, ¼ … until f(θ_k + αs) ≤ f(θ_k) + c₁α g_kᵀs.
//   3. θ_{k+1} = θ_k + αs.
// Stops at ‖g_k‖₂ ≤ gradient_tolerance. Near a strict local minimum the unit step is accepted and the
// convergence is superlinear (order `forcing.exponent`).
#pragma once

#include <limits>

#include <vector>

#include "flashsinkhorn/optim/forcing.hpp"
#include "flashsinkhorn/optim/objective.hpp"
#include "flashsinkhorn/optim/report.hpp"

namespace flashsinkhorn::optim {

enum class negative_curvature_step {
  steepest_descent,     // Nocedal & Wright: the CG iterate before the curvature direction
  curvature_direction,  // add a step along the negative-curvature direction, scaled by its magnitude
};

struct newton_cg_options {
  double gradient_tolerance = 1e-8;  // stop at ‖∇f‖₂ ≤ this; > 0
  int max_iterations = 200;          // outer iterations; ≥ 1
  double max_seconds = std::numeric_limits<double>::infinity();  // wall-time budget; > 0 (+∞: none)
  int max_cg_iterations = 500;       // per outer iteration; ≥ 1
  forcing_options forcing;
  negative_curvature_step on_negative_curvature = negative_curvature_step::curvature_direction;
  double armijo_c1 = 1e-4;           // sufficient decrease constant, ∈ (0, 1)
  double backtrack_factor = 0.5;     // α ← factor·α on each rejection, ∈ (0, 1)
  int max_backtracks = 50;           // ≥ 1
  iteration_callback on_iteration;   // called after every iteration; may be empty
};

// Minimises f from theta0 (p = theta0.size() ≥ 1). Throws invalid_argument for bad options, missing
// callbacks, or f / ∇f not finite at theta0.
[[nodiscard]] optimizer_result newton_cg(const objective& f, std::vector<double> theta0,
                                         const newton_cg_options& options = {});

}  // namespace flashsinkhorn::optim
