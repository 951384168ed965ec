// The joint Hessian-vector product of the converged value F(X, Y) = OT_ε with respect to both
// clouds, streamed (O((n + m)·d) memory): for directions A (n, d) on X and B (m, d) on Y,
//   H·(A, B) = (H_xx A + H_xy B,  H_yx A + H_yy B) = d/dt (∇_X F, ∇_Y F)(X + tA, Y + tB).
// solver::hvp_xy, and solver::hvp_x / hvp_y (one direction, one product: core/point_hvp.cpp).
//
// Derivation. ∇_{x_i}F = 2s Σ_j P_ij (x_i − y_j), ∇_{y_j}F = 2s Σ_i P_ij (y_j − x_i) (envelope
// theorem). Moving (X, Y) by t(A, B) changes the cost by
//   dC_ij = 2s (x_i − y_j)·(A_i − B_j)
// and the plan by dP_ij = P_ij (δf_i + δg_j − dC_ij)/ε, with the potentials' response from the
// fixed marginals (Σ_j dP_ij = 0 = Σ_i dP_ij), the one linear system of core/potential_system.hpp:
//   [[diag a, P], [Pᵀ, diag c]]·(δf, δg) = ((P∘dC)·1, (P∘dC)ᵀ·1)                       (1)
// — one CG solve for the joint right-hand side (dC is linear in (A, B)). Differentiating the
// gradients (the product rule on P_ij and on x_i − y_j):
//   d∇_{x_i} = 2s [ a_i A_i − (P·B)_i + (1/ε) Σ_j P_ij (δf_i + δg_j − dC_ij)(x_i − y_j) ]
//   d∇_{y_j} = 2s [ c_j B_j − (Pᵀ·A)_j + (1/ε) Σ_i P_ij (δf_i + δg_j − dC_ij)(y_j − x_i) ].
// Both are one formula for "rows" R against "keys" K (core/oriented_plan.hpp: P_R = P or Pᵀ, row
// masses r, points p on R and q on K, A the rows' direction, B the keys' — so for R = y, A is the
// Y direction and B the X direction; dC_ij = 2s (p_i − q_j)·(A_i − B_j) either way):
//   d∇_R,i = 2s [ r_i A_i − B̄_i − E_i/ε ] + (2s/ε) Σ_j P_R,ij (δ_R,i + δ_K,j)(p_i − q_j),
//   E_i    = Σ_j P_R,ij dC_ij (p_i − q_j).
// Every term is a streamed pass. With u_i = p_i·A_i, w_j = q_j·B_j and one rows pass
//   [Q̄, B̄, w̄, W̄] = P_R·[q, B, w, w∘q]                                         k ≤ 3d + 1
// the right-hand side of (1) on R (the K block is the same formula on the other side) is
//   ρ_R,i = Σ_j P_R,ij dC_ij = 2s [ r_i u_i − Q̄_i·A_i + w̄_i − p_i·B̄_i ],
// and, expanding ((p_i − q_j)·D)(p_i − q_j) = (p_i·D)p_i − (p_i·D)q_j − (q_j·D)p_i + (q_j·D)q_j:
//   E_i = 2s [ r_i u_i p_i − (Q̄_i·A_i) p_i − u_i Q̄_i + Σ_j P_R,ij (A_i·q_j) q_j ]          (A)
//       − 2s [ (p_i·B̄_i) p_i − Σ_j P_R,ij (p_i·B_j) q_j − w̄_i p_i + W̄_i ]              (B)
// The two sums are quadratic ("two-GEMM") passes, Σ_j P_R,ij (u_i·z_j) V_j (backend.hpp,
// plan_quadratic_request): (A) u = A, z = q, V = q — the single-cloud HVP's term; (B) u = p,
// z = B, V = q — z a key-side direction (plan_quadratic_request::key_directions).
// After the solve, one rows pass [β, Δ] = P_R·[δ_K, δ_K∘q] (k = d + 1):
//   Σ_j P_R,ij (δ_R,i + δ_K,j)(p_i − q_j) = δ_R,i (r_i p_i − Q̄_i) + β_i p_i − Δ_i.
// Parts (hvp_part), as for one cloud: D(f, g; X, Y) the dual objective, z = (f, g),
//   fixed_potential  H_fix = D_(XY)(XY): 2s [ r_i A_i − B̄_i − E_i/ε ] — the potentials frozen.
//                    No longer block diagonal: the cross blocks couple x_i and y_j through P_ij.
//                    Symmetric, indefinite in general; no CG.
//   implicit         H_imp = D_(XY)z (−D_zz)⁺ D_z(XY): (2s/ε) Σ_j P_R,ij (δ_R,i + δ_K,j)(p_i − q_j).
//                    PSD: ⟨(A, B), H_imp·(A, B)⟩ = (1/ε) Σ_ij P_ij (δf_i + δg_j) dC_ij
//                    = (1/ε)·ρᵀ H_pot⁺ ρ ≥ 0 with ρ the right-hand side of (1).
// B = 0 (or A = 0) leaves exactly the single-cloud product of hessian.hpp, with the same passes.
// The prepared points are centred by the joint mean; every term depends on p_i − q_j (and the
// directions) only, so the frame does not matter.
//
// Passes (full product, both directions, both outputs): 2 to set up the plan, 1 rows pass per side
// (k = 3d + 1), 2 quadratic passes per side, the solve (1 + 2 per CG iteration + 3), 1 rows pass per
// side after it. A missing direction or product drops the passes that only it needs.
#pragma once

#include <string>
#include <vector>

#include "core/potential_vjp.hpp"
#include "flashsinkhorn/hessian.hpp"

namespace flashsinkhorn::detail {

// The caller's views (float32/float64; host memory, or the CUDA backend's GPU memory), shapes
// checked by the caller (check_hvp_direction, check_output_shape); the directions' values are
// checked here. An empty direction is zero; an empty product is not computed. At least one
// direction and one product are given. `*_name` starts the error messages about that view.
struct joint_hvp_views {
  matrix_view direction_x;        // A (n, d)
  matrix_view direction_y;        // B (m, d)
  mutable_matrix_view product_x;  // (n, d) ← H_xx A + H_xy B
  mutable_matrix_view product_y;  // (m, d) ← H_yx A + H_yy B
  std::string direction_x_name, direction_y_name, product_x_name, product_y_name;
  // The problem is symmetric (X ≡ Y, a ≡ b) and so is the direction (A ≡ B): the potentials'
  // response from (diag(a) + P)·δ = ρ (solve_symmetric_potential_system) instead of the Schur
  // complement, and product_x receives the sum of both blocks (solver::hvp_self).
  bool symmetric = false;
};

// The products, on a context that passed require_hvp_support and hvp settings that passed
// check_hvp_settings (core/hvp_checks.hpp). report.gauge_defect = Σ(P∘dC)1 − Σ(P∘dC)ᵀ1.
hvp_report joint_hvp_products(const potential_vjp_context& context, const joint_hvp_views& views,
                              const hvp_options& settings);

// solver::hvp_xy (hessian.hpp): validates (invalid_argument / unsupported naming "hvp_xy"), reads the
// directions (an empty view: zero), writes the products asked for (an empty view: not computed).
hvp_report joint_hvp(const potential_vjp_context& context, const matrix_view& direction_x,
                     const matrix_view& direction_y, const mutable_matrix_view& out_x, const mutable_matrix_view& out_y,
                     const hvp_options& settings);

// solver::hvp_self (hessian.hpp): on a symmetric problem (X ≡ Y, a ≡ b as prepared; else
// invalid_argument), the Hessian of X ↦ OT_ε(a, X; a, X) along A (n, d):
//   H_self·A = (H·(A, A))_x + (H·(A, A))_y   (the chain rule for X ↦ (X, X)),
// the potentials' response from the symmetric system (vectors.symmetric).
hvp_report self_hvp(const potential_vjp_context& context, const matrix_view& direction, const mutable_matrix_view& out,
                    const hvp_options& settings);

}  // namespace flashsinkhorn::detail
