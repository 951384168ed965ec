// The plan of a solve as a linear operator on host float64 vectors, every product one streamed
// plan pass (backend::plan_rows), never the n×m matrix.
//
// The plan is the library's (solver.hpp): the final potentials with the rows renormalised from g,
//   P_ij = a_i b_j exp((f̃_i + g_j − C_ij)/ε),   f̃ = T_f(g),   so P·1 = a exactly.
// Both products use this one matrix, which keeps the operators built from them exactly symmetric:
//   row_average(V)   = diag(1/a)·P·V   x-rows pass with key potential g: the row softmax itself;
//   apply_transpose(U) = Pᵀ·U          y-rows pass with key potential f (the backend's slot, which
//                      differs from f̃ before convergence), values reweighted by
//                      w_i = exp((f̃_i − f_i)/ε), so that a_i e^{f_i/ε}·w_i = a_i e^{f̃_i/ε};
//                      the pass returns the column softmax of (f, C), and the column masses are
//                      b_j·exp(g_j/ε + lse_j)  (lse_j of that pass).
//   column_mass()    = Pᵀ·1 =: c  (= b at convergence; the diagonal of the Schur complement's
//                      leading part).
// and their quadratic ("two-GEMM") forms on matrices of a store (core/matrix_store.hpp), each one
// backend::plan_quadratic_rows pass (or its generic O(d²)-value version,
// core/plan_quadratic_generic.hpp, chosen by `path`):
//   quadratic_row_average(u, V, z) = diag(1/a)·[Σ_j P_ij (u_i·z_j) V_j]_i   u (n, dim), V (m, k), z (m, dim)
//   quadratic_transpose(u, U, z)   = [Σ_i P_ij (u_j·z_i) U_i]_j             u (m, dim), U (n, k), z (n, dim)
// with z the keys' own points in their role (η⊙q; plain points for a Euclidean cost) when
// key_directions is nullptr, else key_directions. A backend that does not fuse key directions
// (backend::supports_key_directions) gets the generic pass for those, whatever `path` says.
// Requires balanced sides and a, b > 0 (checked by the caller).
#pragma once

#include <cstdint>
#include <vector>

#include "core/backend.hpp"
#include "core/matrix_store.hpp"
#include "core/prepared_cloud.hpp"
#include "flashsinkhorn/hessian.hpp"

namespace flashsinkhorn::detail {

class solved_plan {
 public:
  solved_plan(const backend& compute, const prepared_problem& problem, double eps);

  // V: (m, k) row-major → (n, k).
  [[nodiscard]] std::vector<double> row_average(const std::vector<double>& values, std::int64_t k) const;
  // U: (n, k) row-major → (m, k).
  [[nodiscard]] std::vector<double> apply_transpose(const std::vector<double>& values, std::int64_t k) const;

  // The same products on matrices of a store (core/matrix_store.hpp), k = the values' columns:
  // `out` := the product; `scratch` is overwritten (the reweighted values of a y-rows pass).
  void row_average(matrix_store& store, int values, int out) const;
  void apply_transpose(matrix_store& store, int values, int out, int scratch) const;
  // key_directions < 0: z = the keys' points.
  void quadratic_row_average(matrix_store& store, int directions, int values, int key_directions, int out,
                             two_gemm_path path) const;
  void quadratic_transpose(matrix_store& store, int directions, int values, int key_directions, int out,
                           int scratch, two_gemm_path path) const;

  [[nodiscard]] const std::vector<double>& column_mass() const { return column_mass_; }
  // g (m,): the key potential of the x-rows passes, P_ij = a_i·softmax_j((g_j − C_ij)/ε + log b_j).
  [[nodiscard]] const std::vector<double>& key_potential() const { return g_; }
  [[nodiscard]] double eps() const { return eps_; }
  [[nodiscard]] const prepared_problem& problem() const { return problem_; }
  // The Schur complement S = diag(c) − Pᵀ·diag(1/a)·P in the backend's terms (backend.hpp,
  // schur_system); the vectors are this object's.
  [[nodiscard]] schur_system schur() const;
  [[nodiscard]] const backend& compute() const { return compute_; }
  // Counts passes run outside this object (a backend's solve_schur: two per CG iteration).
  void count_passes(int passes) const { passes_ += passes; }
  [[nodiscard]] int passes() const { return passes_; }

 private:
  // U ↦ U∘w (rows scaled by key_reweight_), the values of a y-rows pass keyed on f.
  [[nodiscard]] std::vector<double> reweight_keys(const std::vector<double>& values, std::int64_t k) const;
  // A y-rows pass's column softmax averages times the column masses μ: Pᵀ·U.
  [[nodiscard]] std::vector<double> column_masses_times(plan_rows_result pass, std::int64_t k) const;

  const backend& compute_;
  const prepared_problem& problem_;
  double eps_;
  std::vector<double> g_;             // (m,) the backend's g
  std::vector<double> key_reweight_;  // (n,) w_i = exp((f̃_i − f_i)/ε)
  std::vector<double> column_masses_;  // (m,) μ_j = b_j·exp(g_j/ε + lse_j) of the y-rows pass keyed on f
  std::vector<double> column_mass_;   // (m,) Pᵀ1

  // The fused quadratic pass on the store, or the generic one through the host (`path`, or key
  // directions the backend does not fuse): `out` := weighted.
  void quadratic_pass(matrix_store& store, side rows, slot key, int directions, int values, int key_directions,
                      int out, two_gemm_path path) const;
  plan_rows_result quadratic_pass(side rows, slot key, const std::vector<double>& directions,
                                  const std::vector<double>& values, std::int64_t k, two_gemm_path path,
                                  const double* key_directions) const;
  mutable int passes_ = 0;
};

}  // namespace flashsinkhorn::detail
