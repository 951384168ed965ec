// The linearised optimality system of a balanced solve's potentials, solved for its minimum-norm
// solution — the one linear solve shared by implicit differentiation (potential_vjp.cpp, the
// adjoint) and the Hessian-vector product (point_hvp.cpp, the tangent: the system is symmetric).
//
//   H·(z_f, z_g) = (r_f, r_g),   H = [[diag(a), P], [Pᵀ, diag(c)]],   c = Pᵀ1 (= b at convergence),
// with the plan P of core/solved_plan.hpp (P·1 = a exactly). H is PSD with the one null vector
// (1, −1) (H·(1, −1) = (a − P1, Pᵀ1 − c) = 0), so the system is solvable iff Σ r_f = Σ r_g.
// The right-hand side's component along (1, −1) is removed first (r_f ← r_f − t, r_g ← r_g + t,
// t = (Σr_f − Σr_g)/(n + m), reported as gauge_defect), then
//   Schur complement on the g block:  S = diag(c) − Pᵀ diag(1/a) P   (PSD, S·1 = 0),
//   S z_g = ρ := r_g − Pᵀ(r_f/a),     z_f = r_f/a − diag(1/a) P z_g,
// by projected preconditioned CG (core/projected_cg.hpp): each S·v is one x-rows pass
// (diag(1/a)P·v) and one y-rows pass (Pᵀ·u), k = 1. The backend runs the CG where its vectors live
// when it can (backend::solve_schur: the CUDA backend, no host round trip per iteration).
// Finally z moves along (1, −1) to Σz_f = Σz_g: z = H⁺ r.
// With ridge > 0 CG solves the damped (S + ridge·diag(c))·z_g = ρ instead, unprojected.
#pragma once

#include <vector>

#include "core/solved_plan.hpp"
#include "flashsinkhorn/potential_vjp.hpp"

namespace flashsinkhorn::detail {

// The sparse CG's budget in a single-precision solve that is redone in float64 when it falls short:
// healthy solves take 2–17 iterations (the suite's fp32 rows at d = 3 and 8, issue 5's HVP bench),
// and float64 passes take ≤ 10 where a single-precision S_k had slowed the CG to hundreds.
inline constexpr int kSinglePrecisionSparseIterations = 50;

struct potential_system_settings {
  double tolerance = 1e-6;  // on ‖ρ − S z_g‖₂ / ‖ρ‖₂
  int max_iterations = 500;
  cg_preconditioner preconditioner = cg_preconditioner::diagonal;
  double ridge = 0;  // CG on S + ridge·diag(c) (potential_vjp_options::ridge); 0: exact
  // Run core/projected_cg.hpp on the host even when the backend has its own solver
  // (backend::solve_schur): the reference the device CG is tested against.
  bool host_cg = false;
  // When the sparse preconditioner's CG falls short of the tolerance — breaks down, or runs through
  // kSinglePrecisionSparseIterations — return at once (sparse_fell_short, not converged) instead of
  // starting over with diag(c): the caller redoes its product on a float64 replica
  // (core/float64_replica.hpp). For single-precision solves.
  bool stop_when_sparse_falls_short = false;
};

struct potential_system_solution {
  std::vector<double> f, g;       // z = H⁺ r
  int iterations = 0;             // CG iterations
  double relative_residual = 0;   // ‖ρ − S z_g‖/‖ρ‖ recomputed from z_g (0 when ρ = 0)
  bool converged = false;         // relative_residual ≤ tolerance
  double gauge_defect = 0;        // Σ r_f − Σ r_g as given
  bool sparse_fell_short = false;  // stopped there (stop_when_sparse_falls_short): f, g unusable
};

// r_f: (n,), r_g: (m,); a: the x weights (P·1).
potential_system_solution solve_potential_system(const solved_plan& plan, const std::vector<double>& a,
                                                 std::vector<double> r_f, std::vector<double> r_g,
                                                 const potential_system_settings& settings);

// The same system on a symmetric problem (X ≡ Y, a ≡ b: P = Pᵀ, c = a at convergence) with a
// symmetric right-hand side r_f = r_g = r (a direction (A, A): the debiasing term OT_ε(a, X; a, X)
// moving X on both sides). Its minimum-norm solution is z_f = z_g = δ with
//   (diag(a) + P)·δ = r,
// positive definite (P's spectrum relative to diag(a) lies in [−1, 1] and the gauge (1, −1) is
// gone), and far better conditioned than the Schur complement diag(c) − Pᵀdiag(1/a)P, which for
// a self-problem at small ε is nearly zero (P ≈ diag(a): every point mostly matched to itself).
// Plain preconditioned CG (diag(a)), one x-rows pass (k = 1) per iteration, on the host's vectors.
// relative_residual = ‖r − (diag(a) + P)δ‖/‖r‖; gauge_defect = 0.
potential_system_solution solve_symmetric_potential_system(const solved_plan& plan, const std::vector<double>& a,
                                                           const std::vector<double>& r,
                                                           const potential_system_settings& settings);

}  // namespace flashsinkhorn::detail
