// Trust-region Newton with the Steihaug–Toint CG inner solver (Nocedal & Wright Alg. 4.1 and 7.2),
// matrix-free.
//
// Iteration k, at θ_k with g = ∇f(θ_k), H = ∇²f(θ_k), radius Δ_k:
//   1. Steihaug–Toint CG on the model m(s) = f + gᵀs + ½sᵀHs over ‖s‖ ≤ Δ_k from s = 0: CG steps
//      until ‖Hs + g‖ ≤ η_k‖g‖ (η_k: forcing.hpp); a direction d with dᵀHd ≤ 0 (negative curvature)
//      or a step leaving the ball goes to the boundary, s + τd with τ ≥ 0 and ‖s + τd‖ = Δ_k.
//   2. ρ = (f(θ_k) − f(θ_k + s)) / (m(0) − m(s)), with m(s) from the products the CG made.
//   3. Radius (Alg. 4.1): ρ < shrink_below → Δ ← shrink_factor·min(Δ, ‖s‖) (the min — a standard
//      variant — makes a rejected interior step change at once); ρ > expand_above and ‖s‖ = Δ →
//      Δ ← min(expand_factor·Δ, max_radius); else unchanged.
//   4. Accept θ_{k+1} = θ_k + s when ρ > acceptance_ratio, else θ_{k+1} = θ_k.
// At a saddle with a tiny gradient the first CG direction −g has negative curvature and the step goes
// to the boundary: the iteration leaves the saddle by Δ at once.
// Dense model (p ≤ dense_model_dimension): step 1 instead forms H = ∇²f(θ_k) by p products (once
// per iterate: a rejected step reuses it) and solves the subproblem exactly (Moré–Sorensen in H's
// eigenbasis, the hard case included); for few parameters and dear products — the shuffled
// regression's p = 10, where Steihaug–Toint CG took 18 inexact products for one step — that is
// fewer products and the model's exact minimiser.
#pragma once

#include <limits>

#include <vector>

#include "flashsinkhorn/optim/forcing.hpp"
#include "flashsinkhorn/optim/objective.hpp"
#include "flashsinkhorn/optim/report.hpp"

namespace flashsinkhorn::optim {

struct trust_region_options {
  double gradient_tolerance = 1e-8;  // stop at ‖∇f‖₂ ≤ this; > 0
  int max_iterations = 500;          // outer iterations, rejected steps included; ≥ 1
  double max_seconds = std::numeric_limits<double>::infinity();  // wall-time budget; > 0 (+∞: none)
  int max_cg_iterations = 500;       // per outer iteration; ≥ 1
  forcing_options forcing;
  double initial_radius = 1;         // Δ_0 ∈ (0, max_radius]
  double max_radius = 1e3;           // Δ_max
  double min_radius = 1e-12;         // stop with trust_radius_too_small below it; ∈ (0, initial_radius)
  double acceptance_ratio = 0.1;     // η of Alg. 4.1, ∈ [0, shrink_below)
  double shrink_below = 0.25;        // ∈ (acceptance_ratio, expand_above)
  double expand_above = 0.75;        // ∈ (shrink_below, 1)
  double shrink_factor = 0.25;       // ∈ (0, 1)
  double expand_factor = 2;          // > 1
  iteration_callback on_iteration;   // called after every iteration (rejected ones too); may be empty
  // The dense model (above) when p ≤ this; 0: Steihaug–Toint CG at every p. ≥ 0.
  int dense_model_dimension = 0;
  // ∇²f(theta0), (p, p) row-major, when already known (the hybrid's λ_min check at its switch): the
  // dense model's first Hessian without products. Empty: formed. Read only with the dense model.
  std::vector<double> initial_hessian;
};

// Minimises f from theta0 (p = theta0.size() ≥ 1). Throws invalid_argument for bad options, missing
// callbacks, or f / ∇f not finite at theta0.
[[nodiscard]] optimizer_result trust_region(const objective& f, std::vector<double> theta0,
                                            const trust_region_options& options = {});

}  // namespace flashsinkhorn::optim
