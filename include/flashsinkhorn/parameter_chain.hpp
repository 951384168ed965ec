// The chain rule from the points of a solved problem to parameters θ that produce them.
//
// The points of one side (X or Y) are Z = g(θ) ∈ R^{count×d}, θ ∈ R^p, evaluated at the θ the
// problem was solved for. With G = ∇_Z F (solver::gradient_x / gradient_y) and H_Z the point-space
// Hessian (solver::hvp_x / hvp_y):
//   ∇_θ F   = Jᵀ G
//   H_θ · v = Jᵀ H_Z (J v) + (Σ_k G_k ∇²g_k(θ)) · v
// J = ∂g/∂θ (count·d × p). The second term is the map's own curvature against G: the caller
// supplies it (`curvature`), or leaves it empty when g is linear (then the formula is exact; for a
// nonlinear g without it, the result is the Gauss–Newton-like first term only).
// The linear case (linear_point_map): X̂ = Z·W with fixed features Z (count, p_in) and parameters
// W (p_in, d), flattened row-major (θ = vec(W), p = p_in·d):
//   ∇_W F = Zᵀ G,   H_W · V = Zᵀ · H_X(Z V).
// Everything is host float64 and O((count + p)·d): the point-space products stream as usual.
#pragma once

#include <cstdint>
#include <functional>
#include <span>

#include "flashsinkhorn/array_view.hpp"
#include "flashsinkhorn/hessian.hpp"
#include "flashsinkhorn/solver.hpp"

namespace flashsinkhorn {

enum class point_cloud { x, y };

struct point_map {
  std::int64_t parameter_count = 0;  // p
  std::int64_t point_count = 0;      // rows of Z = g(θ): n for X, m for Y
  std::int64_t dim = 0;              // d
  // jv = J·v:  v (p,) → jv (point_count·d, row-major).
  std::function<void(std::span<const double> v, std::span<double> jv)> jvp;
  // out = Jᵀ·G:  G (point_count·d) → out (p,).
  std::function<void(std::span<const double> cotangent, std::span<double> out)> vjp;
  // Optional: out = (Σ_k G_k ∇²g_k(θ))·v, G (point_count·d), v (p,) → out (p,). Empty: g linear.
  std::function<void(std::span<const double> cotangent, std::span<const double> v, std::span<double> out)> curvature;
};

// Z = features·W: features (count, p_in) host memory (copied), W (p_in, dim) = θ row-major.
point_map linear_point_map(matrix_view features, std::int64_t dim);

// out (p,) = ∇_θ F = Jᵀ ∇_Z F. `s` must be solved at Z = g(θ).
void parameter_gradient(const solver& s, point_cloud which, const point_map& map, std::span<double> out);

// out (p,) = H_θ·v (above); the report is that of the point-space HVP (settings.part applies to it;
// the map's curvature term is added for hvp_part::full only).
hvp_report parameter_hvp(const solver& s, point_cloud which, const point_map& map, std::span<const double> v,
                         std::span<double> out, const hvp_options& settings = {});

}  // namespace flashsinkhorn
