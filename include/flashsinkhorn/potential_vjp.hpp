// Implicit differentiation of a loss of the potentials: solver::potential_vjp.
//
// For a loss L(f, g) of the potentials a solve returns (result.f, result.g of OT(a, b)), given its
// cotangents ḟ = ∂L/∂f (n,) and ġ = ∂L/∂g (m,), potential_vjp returns ∂L/∂X, ∂L/∂Y, ∂L/∂a, ∂L/∂b
// through the optimality conditions of the potentials (the implicit function theorem), with
// O((n + m)·d) memory: conjugate gradients on a Schur complement whose every product is a streamed
// plan pass. The derivation, the gauge convention and the solver are in docs/math.md
// ("Implicit differentiation of the potentials") and src/core/potential_vjp.hpp.
//
// Gauge. (f + t, g − t) is optimal for every t, so only losses with L(f + t, g − t) = L(f, g), i.e.
// Σ_i ḟ_i = Σ_j ġ_j, have a derivative. Other cotangents are not rejected (JAX/OTT users expect a
// gradient): their component along the gauge direction (1, −1) is removed first, which returns the
// derivative of L∘Π, Π moving (f, g) along the gauge to Σ_i f_i = Σ_j g_j — equivalently the
// minimum-norm (pseudo-inverse) solution of the adjoint system. report.gauge_defect says how much
// was removed.
#pragma once

#include "flashsinkhorn/array_view.hpp"

namespace flashsinkhorn {

enum class cg_preconditioner {
  none,      // plain CG on the Schur complement S = diag(c) − Pᵀ diag(1/a) P
  diagonal,  // Jacobi-like: diag(c), c = Pᵀ1 (= b at convergence); the dominant part of diag(S)
  // S_k, the Schur complement of the plan's 8 largest entries per row: at small ε the plan is
  // nearly that sparse and CG needs a few iterations instead of hundreds. S_k is solved by an inner
  // Jacobi CG to 1e-2 and the outer CG is the flexible one: on the GPU for the CUDA backend
  // (cuda/sparse_schur.hpp), on the host for the CPU one (core/sparse_plan_preconditioner.hpp).
  // The symmetric system (hvp_self) takes the diagonal instead. In single precision, on plans close
  // to a matching, the CG can break down or crawl short of the tolerance: after a breakdown or 50
  // iterations the whole product is redone on float64 passes (reports: redone_in_float64), and the
  // later products of the same solve skip the single-precision attempt (the solver keeps its
  // float64 backend until it is destroyed), as does the first where the solved plan foresees the
  // fall (core/shortfall_forecast.hpp); in float64 a breakdown starts over with the diagonal.
  // The reported iterations count both attempts.
  sparse_plan,
};

struct potential_vjp_options {
  // CG stops when ‖ρ − S·λ_g‖₂ ≤ tolerance·‖ρ‖₂ (ρ: the Schur right-hand side). float64 plan passes
  // reach ~1e-13; single-precision modes stall at their roundoff level (see docs/math.md).
  double tolerance = 1e-6;
  int max_iterations = 500;  // each iteration is two plan passes with one value column
  cg_preconditioner preconditioner = cg_preconditioner::diagonal;
  // Tikhonov damping of the Schur complement: CG solves (S + ridge·diag(c))·λ_g = ρ instead of
  // S·λ_g = ρ. 0 (default): the exact solve. ridge > 0 bounds S's condition number by about
  // (1 + ridge)/ridge, so CG needs far fewer iterations on sharp plans (small ε), at the price of a
  // biased result — OTT-JAX's ImplicitDiff ridge and flash-sinkhorn's tau2 (its shift ε·tau2 is
  // ridge = ε·tau2·m for uniform weights). See docs/math.md, "Damping the potential system".
  double ridge = 0;
};

// Where the gradients go (host memory, float32 or float64). An empty view is not computed.
struct potential_vjp_outputs {
  mutable_matrix_view grad_x{};  // (n, d) ∂L/∂X in the caller's coordinates (cosine: through x/‖x‖)
  mutable_matrix_view grad_y{};  // (m, d) ∂L/∂Y
  // (n,), (m,) ∂L/∂a, ∂L/∂b of the weights as given (through the normalisation when
  // normalize_weights is on; without it, like gradient_a, defined up to one additive constant).
  mutable_vector_view grad_a{};
  mutable_vector_view grad_b{};
};

// What the linear solve did. Non-convergence is reported here, never thrown: the gradients of the
// last iterate are written either way.
struct potential_vjp_report {
  int iterations = 0;             // CG iterations
  double relative_residual = 0;   // ‖ρ − S·λ_g‖/‖ρ‖, recomputed from λ_g after the last iteration
  bool converged = false;         // relative_residual ≤ options.tolerance
  double gauge_defect = 0;        // Σ ḟ − Σ ġ as given (0 for a gauge-invariant loss)
  int plan_passes = 0;            // streamed passes over the plan, set-up and gradients included
  // A single-precision solve whose sparse-preconditioned CG fell short of the tolerance (broke down,
  // or ran through 50 iterations): redone, whole, on float64 passes (docs/math.md); iterations and
  // plan_passes count both attempts. Once that happened, later products of the same solve run on
  // float64 passes at once (also reported here; no single-precision attempt), and so does the first
  // where the solved plan foresees the fall (core/shortfall_forecast.hpp).
  bool redone_in_float64 = false;
};

}  // namespace flashsinkhorn
