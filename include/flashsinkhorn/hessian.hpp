// Hessian-vector products of the converged value: solver::hvp_x, solver::hvp_y, solver::hvp_xy,
// solver::hvp_self.
//
// For the balanced problem, F(X) = OT_ε(X, Y) at converged potentials has the gradient
//   ∇_{x_i}F = 2s Σ_j P_ij (x_i − y_j)
// and, for a direction A ∈ R^{n×d}, the exact Hessian-vector product (implicit function theorem)
//   (H·A)_i = 2s [ a_i A_i + (1/ε) Σ_j P_ij (δf_i + δg_j − dC_ij)(x_i − y_j) ],
//   dC_ij = 2s (x_i − y_j)·A_i,   [[diag a, P],[Pᵀ, diag b]]·(δf, δg) = ((P∘dC)·1, (P∘dC)ᵀ·1),
// every product a streamed plan pass, O((n + m)·d) memory. It splits into two parts:
//   fixed_potential  H_fix·A = 2s [ a_i A_i − (1/ε) Σ_j P_ij dC_ij (x_i − y_j) ]: the Hessian of
//                    the dual objective with the potentials frozen. Block diagonal (one d×d block
//                    2s·a_i·(I − (2s/ε)·Cov-like second moment) per point), indefinite in general;
//                    no linear solve.
//   implicit         H_imp·A = (2s/ε) Σ_j P_ij (δf_i + δg_j)(x_i − y_j): the potentials' response.
//                    Positive semi-definite: ⟨A, H_imp·A⟩ = (1/ε)·rᵀ H_pot⁺ r ≥ 0 with
//                    r = ((P∘dC)1, (P∘dC)ᵀ1) and H_pot = [[diag a, P],[Pᵀ, diag b]] PSD (the dual
//                    objective is concave in the potentials).
// H = H_fix + H_imp. The derivation is in docs/math.md ("Hessian-vector products").
// Y plays the symmetric role (hvp_y: B ∈ R^{m×d}, dC_ij = 2s (y_j − x_i)·B_j).
// Joint (hvp_xy): for (A, B) on both clouds, dC_ij = 2s (x_i − y_j)·(A_i − B_j), one CG solve, and
//   (H·(A, B))_x,i = 2s [ a_i A_i − (P·B)_i + (1/ε) Σ_j P_ij (δf_i + δg_j − dC_ij)(x_i − y_j) ]
// (y mirrored with Pᵀ): H_xx·A + H_xy·B and H_yx·A + H_yy·B, the derivative of (∇_X F, ∇_Y F) —
// what a double backward needs. The parts split the same way; the fixed-potential part couples
// x_i and y_j (not block diagonal), the implicit part stays PSD on the joint space.
// Self (hvp_self, a symmetric problem X ≡ Y, a ≡ b — the debiasing term OT_ε(a, X; a, X)): the
// Hessian of X ↦ F(X, X), H_self·A = (H·(A, A))_x + (H·(A, A))_y, with the potentials' response
// δf = δg = δ from (diag a + P)·δ = (P∘dC)·1, positive definite and well conditioned, where the
// general system's Schur complement is nearly singular for a self-problem at small ε.
// Supported: balanced problems with positive weights, the squared-Euclidean cost (any cost_scale),
// either solver. Unbalanced, cosine, label costs and debiased solves throw `unsupported`.
#pragma once

#include "flashsinkhorn/potential_vjp.hpp"

namespace flashsinkhorn {

enum class hvp_part {
  full,             // H·A = H_fix·A + H_imp·A
  fixed_potential,  // H_fix·A: block diagonal, indefinite; no CG
  implicit,         // H_imp·A: PSD; one CG solve
};

// How the "two-GEMM" term Σ_j P_ij (A_i·y_j)·y_j is streamed.
enum class two_gemm_path {
  fused,      // the backend's quadratic plan pass (a second dot tile A·Yᵀ beside X·Yᵀ): k = d values
  plan_pass,  // the generic fallback: an ordinary plan pass with the d² values y_j ⊗ y_j
};

struct hvp_options {
  hvp_part part = hvp_part::full;
  // CG on the Schur complement of the potentials' system (as potential_vjp_options): stops when
  // ‖ρ − S·δg‖₂ ≤ tolerance·‖ρ‖₂. float64 reaches ~1e-13; single precision stalls near its roundoff.
  double tolerance = 1e-6;
  int max_iterations = 500;  // each iteration is two plan passes with one value column
  cg_preconditioner preconditioner = cg_preconditioner::diagonal;
  double ridge = 0;  // damping of the Schur complement, as potential_vjp_options::ridge (biased when > 0)
  two_gemm_path two_gemm = two_gemm_path::fused;
};

// What the product cost. Non-convergence of CG is reported here, never thrown: the product of the
// last iterate is written either way.
struct hvp_report {
  int cg_iterations = 0;         // 0 for the fixed-potential part
  double relative_residual = 0;  // of the Schur system, recomputed from the returned δg
  bool converged = true;         // relative_residual ≤ tolerance (true when no CG ran)
  double gauge_defect = 0;       // Σ(P∘dC)1 − Σ(P∘dC)ᵀ1 as computed: 0 up to roundoff
  int plan_passes = 0;           // streamed passes over the plan, set-up included
  // A single-precision solve whose sparse-preconditioned CG fell short of the tolerance (broke down,
  // or ran through 50 iterations): the product was redone, whole, on float64 passes (docs/math.md);
  // cg_iterations and plan_passes count both attempts. Once that happened, later products of the
  // same solve run on float64 passes at once (also reported here; no single-precision attempt), and
  // so does the first where the solved plan foresees the fall (≥ 9% of its rows single matches:
  // core/shortfall_forecast.hpp; FLASHSINKHORN_SHORTFALL_FORECAST=off tries single precision first).
  bool redone_in_float64 = false;
};

}  // namespace flashsinkhorn
