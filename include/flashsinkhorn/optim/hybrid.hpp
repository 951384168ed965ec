// The hybrid optimiser of SPEC §4 (shuffled regression): Adam while the Hessian has clearly negative
// curvature, a second-order method once it is positive definite.
//
// Policy. At θ_0 and after every `check_every` Adam steps, Lanczos estimates λ_min(∇²f(θ)) from
// Hessian-vector products (target smallest, stopped early once a Ritz value is < −negative_tolerance:
// that certifies λ_min < −negative_tolerance). Adam continues while λ_min ≤ switch_threshold (default
// 0; the band −negative_tolerance ≤ λ_min ≤ 0 — flat or nearly singular — also stays with Adam); once
// a converged estimate has λ_min > switch_threshold, Newton-CG or the trust region takes over from
// that θ until convergence. The first Lanczos run starts from a random vector (the seed); with
// `warm_lanczos` each later one starts from the previous run's Ritz vector y_min plus a small random
// part, q₁ = y_min + 10⁻²·r/‖r‖ (r ~ N(0, I), seed + check index): along Adam's path the direction of
// negative curvature changes slowly, so q₁ᵀHq₁ is usually already below −negative_tolerance and one
// Hessian product certifies the check (4–9 from a random start on the shuffled regression at
// n = 1000); the random part keeps the Krylov space generic (a start on an eigenvector of the new
// Hessian would end Lanczos at once with only that eigenvalue) while adding ≈ 10⁻⁴·tr(H)/p to the
// first Rayleigh quotient. Without it, every run starts from a fresh random vector (seed + index).
// If Adam reaches ‖∇f‖ ≤ adam.gradient_tolerance first, the run ends there (status converged; the
// last λ_min of the trace tells whether that stationary point is a minimum).
// Gradient gate (`check_gradient_norm`, +∞ by default): a check is made only where ‖∇f(θ)‖ is at most
// this. A second-order method only pays near a stationary point, and a check far from one can cost
// more than the Adam steps it could save (the shuffled regression at n = 10⁵: a check's Hessian
// products need a solve far tighter than Adam's inexact gradients, one such refinement > 150 s on
// an H200 against 0.2 s an Adam step). Gated, the first check is at the first step inside the gate
// and the next ones `check_every` steps after the last; until then the run is Adam alone, step for
// step.
// Dense model (second-order trust region with trust_region.dense_model_dimension ≥ p): each check
// begins as Lanczos does (the same warm or random q₁) and stops after one or two products if a Ritz
// value already certifies λ_min < −negative_tolerance; otherwise it forms ∇²f(θ) in the basis those
// steps began, p products in all, and reads its exact λ_min (residual 0; its eigenvector is the next
// warm start). The check that decides the switch hands that Hessian to the trust region, whose first
// step then costs no product (dense_check.hpp).
#pragma once

#include <limits>
#include <vector>

#include "flashsinkhorn/optim/adam.hpp"
#include "flashsinkhorn/optim/lanczos.hpp"
#include "flashsinkhorn/optim/newton_cg.hpp"
#include "flashsinkhorn/optim/trust_region.hpp"

namespace flashsinkhorn::optim {

enum class second_order_method { newton_cg, trust_region };

// Lanczos settings for a sign test of λ_min: at most 50 steps, residual bound ≤ 1e-4·max|θ|.
[[nodiscard]] inline lanczos_options sign_test_lanczos() {
  lanczos_options options;
  options.max_steps = 50;
  options.tolerance = 1e-4;
  return options;
}

// Where a hybrid run stopped, to continue it in another call (hybrid_options::resume ←
// hybrid_result::state), e.g. a run cut by its wall-time budget or stopped by a callback (status
// stopped, objective.hpp's stop_requested: a λ_min check in flight is dropped and made again by the
// continuation, an Adam step in flight is undone; a check made before the stop is not repeated; a stop in
// the second-order method's first evaluation, right after the switch, leaves switch_iteration set and
// trust_radius 0, so the continuation starts that method at the switch point): the
// continuation takes up the same
// Adam step count and moments, the λ_min check schedule (every check_every Adam steps counted over
// both runs) and the warm Lanczos start; after the switch, the second-order method from θ with the
// trust radius it had reached (its forcing sequence restarts).
struct hybrid_state {
  adam_moments adam;                // the Adam phase's moments and steps
  std::vector<double> ritz_vector;  // the last λ_min check's y_min (the next warm start; may be empty)
  int checks = 0;                   // λ_min checks made (the next one's seed offset)
  int last_check = -1;              // the Adam step of the last check made (−1: none; the next is due at once)
  int switch_iteration = -1;        // Adam steps before the switch; −1: still in the Adam phase
  double trust_radius = 0;          // after the switch, trust region: Δ for its next iteration (0: none)
};

struct hybrid_options {
  adam_options adam;                 // max_iterations bounds the Adam phase
  int check_every = 10;              // Adam steps between λ_min estimates; ≥ 1
  // Checks only where ‖∇f(θ)‖ ≤ this (the gradient gate, above); > 0, +∞: every check_every steps.
  double check_gradient_norm = std::numeric_limits<double>::infinity();
  // Also check at θ_0 (Adam step 0) whatever ‖∇f(θ_0)‖: the starting curvature on record (a saddle's
  // λ_min < 0, certified by a product or two) under a gate that would skip it. The next check is then
  // due check_every steps on, inside the gate. A continuation past step 0 never makes it.
  bool check_at_start = false;
  // Wall-time budget of the whole run (Adam, the λ_min checks, the second-order phase, which gets what
  // is left); each phase's own max_seconds applies too. > 0 (+∞: none). A run it stops ends with
  // status time_limit and keeps its trace.
  double max_seconds = std::numeric_limits<double>::infinity();
  // Lanczos per check: target and stop_below are set by the policy. A sign test needs far less than
  // the 1e-10 default of lanczos_options; each step is one Hessian-vector product.
  lanczos_options lanczos = sign_test_lanczos();
  double negative_tolerance = 1e-6;  // τ > 0: λ_min < −τ is a non-convex region
  double switch_threshold = 0;       // switch once a converged λ_min > this; ≥ −negative_tolerance
  bool warm_lanczos = true;          // start each check from the last Ritz vector (above)
  second_order_method second_order = second_order_method::trust_region;
  newton_cg_options newton_cg;
  trust_region_options trust_region;
  // A previous run's hybrid_result::state (default: a fresh start). adam.max_iterations bounds the
  // Adam steps of all the runs together; adam.initial must stay empty (the moments come from here).
  hybrid_state resume;
};

struct lambda_sample {
  int iteration = 0;          // Adam steps made when it was taken
  double lambda_min = 0;      // the Ritz value θ_min
  double residual = 0;        // its residual bound
  int lanczos_steps = 0;      // Hessian-vector products it cost
  bool converged = false;     // Lanczos met its tolerance (or found an invariant subspace)
  bool certified_negative = false;  // stopped early below −negative_tolerance
};

struct hybrid_result {
  std::vector<double> theta;
  double value = 0;
  double gradient_norm = 0;
  optimizer_status status = optimizer_status::max_iterations;
  int switch_iteration = -1;  // Adam steps made before the switch; −1: the switch never happened
  std::vector<lambda_sample> lambda_trace;
  optimizer_result adam_phase;          // Adam's history (its theta: where it stopped)
  optimizer_result second_order_phase;  // empty (iterations 0) when no switch happened
  evaluation_counts evaluations;        // both phases and every Lanczos run
  hybrid_state state;                   // to continue this run (hybrid_options::resume)
};

// Throws invalid_argument for bad options (of any phase), missing callbacks, or f / ∇f not finite at
// theta0.
[[nodiscard]] hybrid_result hybrid(const objective& f, std::vector<double> theta0, const hybrid_options& options = {});

}  // namespace flashsinkhorn::optim
