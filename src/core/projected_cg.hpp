// Preconditioned conjugate gradients for a symmetric positive semi-definite S whose null space is
// spanned by 1 (S·1 = 0, S positive definite on 1⊥), on a consistent right-hand side r ∈ 1⊥.
//
// Contract: apply(v) returns S·v; diagonal holds M > 0 of the preconditioner diag(M). From x₀ = 0
// this is CG on M^{-1/2} S M^{-1/2} with right-hand side M^{-1/2} r, which is orthogonal to its null
// vector M^{1/2}·1 exactly when Σ r = 0: the iteration is well posed and converges to a solution of
// S x = r, determined up to an additive constant (x + t·1 solves it too). The right-hand side and
// every residual are projected onto 1⊥ (r ← r − mean(r)), so roundoff in S·1 ≈ 0 cannot build up an
// inconsistent component.
// Stopping: ‖r_k‖₂ ≤ tolerance·‖r₀‖₂ on the recurrence residual, or max_iterations, or a
// breakdown (pᵀSp ≤ 0: S is not positive on the search direction, e.g. roundoff at the floor).
#pragma once

#include <functional>
#include <vector>

namespace flashsinkhorn::detail {

struct projected_cg_settings {
  double tolerance = 1e-6;
  int max_iterations = 500;
  // false: plain preconditioned CG, for a positive definite S (a damped Schur complement, whose
  // residuals must not be projected: S·1 ≠ 0 there).
  bool project = true;
  // true: the flexible (Polak–Ribière) β = zᵀ(r − r_last)/rz, for a preconditioner that is itself an
  // inexact iterative solve and so not the same linear map at every iteration (the sparse_plan
  // preconditioner); the same β as the default one in exact arithmetic with a fixed preconditioner.
  bool flexible = false;
};

struct projected_cg_outcome {
  std::vector<double> solution;
  int iterations = 0;
  double recurrence_residual = 0;  // ‖r_k‖₂/‖r₀‖₂ as tracked by the recurrence (0 when r₀ = 0)
  bool breakdown = false;          // stopped on pᵀSp ≤ 0
};

using linear_map = std::function<std::vector<double>(const std::vector<double>&)>;

// Removes the mean: v ← v − (Σv/size)·1, the orthogonal projection onto 1⊥.
void project_out_mean(std::vector<double>& v);

projected_cg_outcome projected_cg(const linear_map& apply, std::vector<double> rhs,
                                  const std::vector<double>& diagonal, const projected_cg_settings& settings);

// The same with a general symmetric positive definite preconditioner: precondition(r) = M⁻¹·r (on
// the exact system a map into 1⊥, e.g. followed by project_out_mean). diag(M) is the case above.
projected_cg_outcome projected_cg(const linear_map& apply, std::vector<double> rhs, const linear_map& precondition,
                                  const projected_cg_settings& settings);

}  // namespace flashsinkhorn::detail
