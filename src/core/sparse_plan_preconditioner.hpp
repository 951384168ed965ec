// A preconditioner for the potentials' Schur complement S = diag(c)(1 + ridge) − Pᵀ·diag(1/a)·P
// (core/potential_system.hpp) from the plan's largest entries: keeping the k largest entries of
// each row of P (P_ij = a_i s_ij, s_i the row softmax of core/solved_plan.hpp),
//   S_k = diag(c)(1 + ridge) − Σ_i a_i s_i^(k) s_i^(k)ᵀ,
// kept as W (n × k, W_iu = √a_i·s_iu) and its transpose by columns, S_k = diag(c) − WᵀW, and
// solved at every CG iteration by an inner Jacobi CG to kSparsePlanInnerTolerance — the CUDA
// backend's algorithm (cuda/sparse_schur.hpp, which runs the Chronopoulos–Gear form of the same CG:
// equal in exact arithmetic, one grid barrier fewer an iteration), so the outer CG is the flexible one
// (projected_cg_settings::flexible). A sparse LDLᵀ of S_k, the first version, fills in like a dense
// matrix beyond a few thousand points (10,000 × 64: ~2·10⁷ entries, 30 s). At small ε the plan is
// nearly that sparse: in a numpy study
// (bench/studies/sparse_schur_preconditioner.py, 2,000 × 64, ε = 0.1, flash-sinkhorn's damping) CG
// to 1e-4 takes 8 iterations with k = 4 and 1 with k = 8, against 113 with diag(c).
// The top-k entries come from one host scan of the prepared points (O(n·m·d), the cost of a plan
// pass; core/sparse_plan_top_entries.hpp): s_ij = softmax_j((g_j − s‖p_i − q_j‖²)/ε + log b_j) in float64.
// Exact systems (ridge = 0, S·1 = 0): S_k is shifted by 1e-10·max c (positive definite), and
// solutions are projected onto 1⊥ (projected_cg's contract). S_k's diagonal is kept dominant
// (sparse_plan_diagonal). Before convergence in fp32, S is indefinite at its rounding's level and S_k
// amplifies that: a CG that then meets non-positive curvature short of its tolerance is started
// over with diag(c) (core/potential_system.cpp).
#pragma once

#include <algorithm>
#include <memory>
#include <vector>

#include "core/prepared_cloud.hpp"
#include "core/solved_plan.hpp"

namespace flashsinkhorn::detail {

inline constexpr int kSparsePlanEntries = 8;       // k: the study's k = 8 captured P to 3e-8
inline constexpr double kSparsePlanShift = 1e-10;  // × max c on the diagonal of an exact system's S_k
// The inner solve's stopping rule (relative residual, iteration cap), chosen by a numpy study at
// 10,000 × 64 (docs/cuda_backend.md, session 9): 2–3 outer iterations with 50–75 inner ones in all.
inline constexpr double kSparsePlanInnerTolerance = 1e-2;
inline constexpr int kSparsePlanInnerIterations = 200;

// The diagonal shift of S_k (both backends): kSparsePlanShift·max c on an exact system, else 0.
inline double sparse_plan_shift(const std::vector<double>& c, bool exact) {
  return exact && !c.empty() ? kSparsePlanShift * *std::max_element(c.begin(), c.end()) : 0.0;
}

// S_k's diagonal entry d_j: c_j + shift, raised where needed to (1 + kSparsePlanDominance)·(WᵀW·1)_j
// so that S_k = diag(d) − WᵀW is diagonally dominant, hence positive definite (its off-diagonal
// entries are −(WᵀW)_jl ≤ 0). The plan whose rows give W has column sums ≥ (WᵀW·1)_j, so an exact c
// never needs it; the c the CG's operator uses comes from the y-rows pass, whose values carry
// exp((f̃ − f)/ε) — far from 1 before convergence (10 iterations at ε = 0.1: marginal error 0.6) — and
// in fp32 it fell short of (WᵀW·1)_j: S_k was indefinite, the inner CG met negative curvature and
// returned 0, and the flexible outer CG stopped after 3 iterations at residual 9e-3
// (1,000 × 64, fp32; fp64 and converged plans were fine). Both backends.
inline constexpr double kSparsePlanDominance = 1e-10;
inline double sparse_plan_diagonal(double column_mass, double coupling, double shift) {
  return std::max(column_mass, (1 + kSparsePlanDominance) * coupling) + shift;
}

class sparse_plan_preconditioner {
 public:
  // `a`: the x weights; `c`: the damped diagonal (1 + ridge)·Pᵀ1 the CG's operator uses.
  sparse_plan_preconditioner(const solved_plan& plan, const prepared_problem& problem, const std::vector<double>& a,
                             const std::vector<double>& c, bool exact, int k = kSparsePlanEntries);
  ~sparse_plan_preconditioner();
  sparse_plan_preconditioner(const sparse_plan_preconditioner&) = delete;
  sparse_plan_preconditioner& operator=(const sparse_plan_preconditioner&) = delete;

  // ≈ S_k⁻¹·r to kSparsePlanInnerTolerance (projected onto 1⊥ on an exact system).
  [[nodiscard]] std::vector<double> solve(const std::vector<double>& r) const;

  // S_k·v.
  [[nodiscard]] std::vector<double> apply(const std::vector<double>& v) const;

 private:
  struct parts;
  std::unique_ptr<parts> parts_;
  bool exact_;
};

}  // namespace flashsinkhorn::detail
