// solver::potential_vjp: implicit differentiation of a loss L(f, g) of the potentials of a balanced
// solve through its optimality conditions, streamed (O((n + m)·d) memory).
//
// Optimality (balanced, at the potentials (f̃, g) of the library's plan, f̃ = T_f(g)):
//   F1_i = f_i + ε log Σ_j b_j exp((g_j − C_ij)/ε) = 0,   F2_j = g_j + ε log Σ_i a_i exp((f_i − C_ij)/ε) = 0.
// With P_ij = a_i b_j exp((f̃_i + g_j − C_ij)/ε), r = P·1 (= a exactly), c = Pᵀ·1:
//   ∂F1_i/∂f_i = 1, ∂F1_i/∂g_j = P_ij/a_i, ∂F2_j/∂g_j = 1, ∂F2_j/∂f_i = P_ij/c_j,
//   ∂F1_i/∂C_ij = −P_ij/a_i, ∂F2_j/∂C_ij = −P_ij/c_j,
//   ∂F1_i/∂b_j = ε P_ij/(a_i b_j), ∂F2_j/∂a_i = ε P_ij/(c_j a_i).
// Scaling the rows by D = diag(a, c) makes the Jacobian symmetric:
//   H = D·∂F/∂(f,g) = [[diag(a), P], [Pᵀ, diag(c)]],   PSD, H·(1, −1) = (a − P1, Pᵀ1 − c) = 0.
// (c = b at convergence; taking c = Pᵀ1 keeps the null vector exact before convergence too.)
// Implicit function theorem: d(f,g)/dθ = −(∂F/∂z)⁻¹ ∂F/∂θ = −H⁻¹ D ∂F/∂θ, so for any parameter θ
//   dL/dθ = −λᵀ ∂(D F)/∂θ   (D held fixed),   H λ = (ḟ, ġ).
// Adjoint solve (core/potential_system.hpp, shared with the Hessian-vector product), Schur
// complement on the g-block:
//   S = diag(c) − Pᵀ diag(1/a) P      (PSD, S·1 = c − Pᵀ1 = 0),
//   S λ_g = ρ := ġ − Pᵀ(ḟ/a)          (Σ ρ = Σ ġ − Σ ḟ: consistent iff the loss is gauge invariant),
//   λ_f = ḟ/a − diag(1/a) P λ_g,
// by projected preconditioned CG (core/projected_cg.hpp), preconditioner diag(c) or none; each
// S·v is one x-rows pass (diag(1/a)P·v) and one y-rows pass (Pᵀ·u), k = 1.
// Explicit terms. ∂(aF1)_i/∂C_kl = −δ_ik P_il and ∂(cF2)_j/∂C_kl = −δ_jl P_kl give
//   dL/dC_ij = P_ij (λ_f,i + λ_g,j)     (envelope check: ḟ = a, ġ = b ⇒ λ ≡ ½ ⇒ dL/dC = P),
// and with ∂C_ij/∂x_i = 2s(x_i − y_j) = −∂C_ij/∂y_j:
//   dL/dx_i = 2s·a_i[λ_f,i (x_i − Ȳ_i) + β_i x_i − B_i],   Ȳ, B, β = diag(1/a)P·[Y, λ_g∘Y, λ_g]
//   dL/dy_j = 2s[λ_g,j (c_j y_j − (PᵀX)_j) + (Pᵀλ_f)_j y_j − (Pᵀ(λ_f∘X))_j]
//   dL/da_i = −ε (P λ_g)_i/a_i = −ε β_i,   dL/db_j = −ε (Pᵀλ_f)_j/b_j
// (one pass per side, k = 2d + 1), then the chain rules of the preparation: cosine normalisation
// x̂ = x/‖x‖, and w̃ = w/Σw for the weights. Centring is a translation: C and so L do not see it.
// Gauge: the cotangent's component along (1, −1) is removed first, ḟ ← ḟ − t, ġ ← ġ + t,
// t = (Σḟ − Σġ)/(n + m), and λ is taken with minimum norm (Σλ_f = Σλ_g): λ = H⁺(ḟ, ġ), the
// derivative of L∘Π (include/flashsinkhorn/potential_vjp.hpp). dL/dC is free of λ's gauge; the
// unnormalised weight gradients move by ±ε·t with it (balanced problems allow only Σδa = Σδb).
#pragma once

#include <functional>
#include <memory>

#include "core/backend.hpp"
#include "core/prepare.hpp"
#include "flashsinkhorn/array_view.hpp"
#include "flashsinkhorn/options.hpp"
#include "flashsinkhorn/potential_vjp.hpp"

namespace flashsinkhorn::detail {

// What a solved solver hands over (solver.cpp): the backend holding the potentials and the inputs,
// and (single-precision solves) the float64 backend of the same kind over the same inputs, made on
// first use and kept by the solver, handed back holding the current potentials
// (core/float64_replica.hpp); empty where there is none. start_in_float64: an earlier product of
// this solve fell short in single precision, so this one goes to the replica at once (the plan,
// close to a matching, is the same). foresees_shortfall: whether the solved plan foresees the fall
// (core/shortfall_forecast.hpp; asked once a solve, on the replica; empty with no replica).
struct potential_vjp_context {
  const backend& compute;
  const prepared_inputs& inputs;
  double eps;
  const options& solve_options;
  std::function<backend&()> float64_backend = {};
  bool start_in_float64 = false;
  std::function<bool()> foresees_shortfall = {};
};

// Validates (invalid_argument / unsupported naming the problem), solves, writes the outputs.
potential_vjp_report potential_vjp(const potential_vjp_context& context, const vector_view& df,
                                   const vector_view& dg, const potential_vjp_outputs& outputs,
                                   const potential_vjp_options& settings);

}  // namespace flashsinkhorn::detail
