// The solved plan seen from one side: "rows" R (the side a Hessian-vector product differentiates)
// against "keys" K (the other side), as sums over the keys (not averages):
//   P_R = P (R = x)   or   Pᵀ (R = y),   r = P_R·1 (a, resp. c = Pᵀ1),
//   rows_apply(V)          = P_R·V                         V (n_K, k) → (n_R, k)
//   rows_quadratic(u, V, z) = [Σ_j P_R,ij (u_i·z_j) V_j]_i  u (n_R, d), V (n_K, k) → (n_R, k)
//                            z (n_K, d): the keys' own points q when not given
// on matrices of a store (core/matrix_store.hpp), every product one streamed pass of
// core/solved_plan.hpp; the x-rows passes' averages are scaled by a here.
#pragma once

#include <cstdint>
#include <vector>

#include "core/matrix_store.hpp"
#include "core/solved_plan.hpp"
#include "flashsinkhorn/hessian.hpp"

namespace flashsinkhorn::detail {

class oriented_plan {
 public:
  // `a`: the x weights (P·1); `path`: how quadratic passes stream (hessian.hpp).
  oriented_plan(const solved_plan& plan, side rows, const std::vector<double>& a, two_gemm_path path);

  // `out` := P_R·values; `scratch` is overwritten.
  void rows_apply(matrix_store& store, int values, int out, int scratch) const;
  // `out` := Σ_j P_R,ij (u_i·z_j) V_j with u = `directions`, V = `values`, z = `key_directions`
  // (< 0: the keys' points); `scratch` is overwritten.
  void rows_quadratic(matrix_store& store, int directions, int values, int key_directions, int out,
                      int scratch) const;

  // r = P_R·1.
  [[nodiscard]] const std::vector<double>& row_mass() const;
  [[nodiscard]] side rows() const { return rows_; }

 private:
  const solved_plan& plan_;
  side rows_;
  const std::vector<double>& a_;
  two_gemm_path path_;
};

}  // namespace flashsinkhorn::detail
