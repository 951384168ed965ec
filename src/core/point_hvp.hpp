// solver::hvp_x / hvp_y: the exact Hessian-vector product of the converged value with respect to
// the points of one side, streamed (O((n + m)·d) memory). Public contract: flashsinkhorn/hessian.hpp.
// It is the joint product of core/joint_hvp.hpp (the derivation) with the other side's direction
// zero and only this side's product: for rows R (points p), keys K (points q), direction A,
//   (H·A)_i = 2s [ r_i A_i − E_i/ε ] + (2s/ε) Σ_j P_R,ij (δ_R,i + δ_K,j)(p_i − q_j),
//   E_i = Σ_j P_R,ij dC_ij (p_i − q_j),   dC_ij = 2s (p_i − q_j)·A_i,
// (δ_R, δ_K) from the linearised marginal system (core/potential_system.hpp).
#pragma once

#include "core/backend.hpp"
#include "core/potential_vjp.hpp"
#include "flashsinkhorn/array_view.hpp"
#include "flashsinkhorn/hessian.hpp"

namespace flashsinkhorn::detail {

// `context`: the same hand-over a solved solver gives potential_vjp. rows: side::x (hvp_x) or
// side::y (hvp_y). Validates (invalid_argument / unsupported naming the problem), then writes out.
// report.gauge_defect is oriented as Σ(P∘dC)·1 − Σ(P∘dC)ᵀ·1 with P → P_R.
hvp_report point_hvp(const potential_vjp_context& context, side rows, const matrix_view& direction,
                     const mutable_matrix_view& out, const hvp_options& settings);

}  // namespace flashsinkhorn::detail
