// solver::hvp_x / hvp_y: the exact Hessian-vector product of the converged value with respect to
// the points of one side, streamed (O((n + m)·d) memory). Public contract: flashsinkhorn/hessian.hpp.
//
// Written once for "rows" R (the side being differentiated, points p, count n_R) and "keys" K (the
// other side, points q), with the oriented plan P_R = P (R = x) or Pᵀ (R = y) and its row masses
// r = P_R·1 (a, resp. c = Pᵀ1 = b at convergence). For a direction A (n_R, d):
//   u_i   = p_i·A_i
//   Q̄     = P_R·q                      (n_R, d)   one pass, k = d
//   dC_ij = 2s (p_i − q_j)·A_i
//   ρ_R   = (P∘dC)·1   = 2s (r∘u − rowwise Q̄·A)
//   ρ_K   = (P∘dC)ᵀ·1  = 2s (P_Rᵀu − rowwise q·(P_RᵀA))            one pass, k = d + 1
//   (δ_R, δ_K): [[diag r, P_R],[P_Rᵀ, diag k]]·(δ_R, δ_K) = (ρ_R, ρ_K)  — core/potential_system.hpp
//               (in (f, g) order: R = y swaps the blocks)
//   M A_i = Σ_j P_R,ij (A_i·q_j) q_j                                    one quadratic pass, k = d
//   E_i   = Σ_j P_R,ij dC_ij (p_i − q_j) = 2s [ r_i u_i p_i − (Q̄_i·A_i) p_i − u_i Q̄_i + M A_i ]
//   H_fix·A_i = 2s [ r_i A_i − E_i/ε ]
//   β, B  = P_R·[δ_K, δ_K∘q]                                            one pass, k = d + 1
//   H_imp·A_i = (2s/ε) [ δ_R,i (r_i p_i − Q̄_i) + β_i p_i − B_i ] = (2s/ε) Σ_j P_R,ij (δ_R,i + δ_K,j)(p_i − q_j)
// The prepared points are centred by a mean that moves with X; every term above depends on
// differences p_i − q_j only, so the frame does not matter.
#pragma once

#include "core/potential_vjp.hpp"
#include "flashsinkhorn/array_view.hpp"
#include "flashsinkhorn/hessian.hpp"

namespace flashsinkhorn::detail {

// `context`: the same hand-over a solved solver gives potential_vjp. rows: side::x (hvp_x) or
// side::y (hvp_y). Validates (invalid_argument / unsupported naming the problem), then writes out.
hvp_report point_hvp(const potential_vjp_context& context, side rows, const matrix_view& direction,
                     const mutable_matrix_view& out, const hvp_options& settings);

}  // namespace flashsinkhorn::detail
