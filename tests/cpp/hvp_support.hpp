// Helpers for the Hessian-vector product tests: the dense Hessian of the converged value built by
// central differences of the library's exact gradient, HVPs as plain vectors, small linear algebra.
#pragma once

#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "potential_vjp_support.hpp"

namespace testing_support {

struct hvp_problem {
  reference::cloud x;
  reference::cloud y;
  double eps = 0.4;
  double cost_scale = 1.0;
};

// A small problem of the dense-Hessian tests: X (n, d) around +0.3, Y (m, d) around −0.3 with
// spread 0.8, seeded by `seed_x` + n and `seed_y` + m.
struct hvp_case {
  const char* name;
  std::int64_t n, m, d;
  double cost_scale;
  double eps;
};

inline hvp_problem make_case(const hvp_case& c, std::uint64_t seed_x, std::uint64_t seed_y) {
  return {reference::random_cloud(c.n, c.d, seed_x + static_cast<std::uint64_t>(c.n), 1.0, 0.3),
          reference::random_cloud(c.m, c.d, seed_y + static_cast<std::uint64_t>(c.m), 0.8, -0.3), c.eps,
          c.cost_scale};
}

inline fs::hvp_options tight_hvp(fs::hvp_part part = fs::hvp_part::full,
                                 fs::two_gemm_path path = fs::two_gemm_path::fused) {
  fs::hvp_options o;
  o.part = part;
  o.tolerance = 1e-12;
  o.max_iterations = 2000;
  o.two_gemm = path;
  return o;
}

// ∇_X (on_x) or ∇_Y of the converged value, row-major.
inline std::vector<double> exact_gradient(const reference::cloud& x, const reference::cloud& y, const hvp_problem& p,
                                          bool on_x, const fs::options& o) {
  fs::solver s(make_problem(x, y, p.eps, p.cost_scale), o);
  s.solve();
  const reference::cloud& side = on_x ? x : y;
  std::vector<double> g(static_cast<std::size_t>(side.count * side.dim));
  if (on_x) {
    s.gradient_x(fs::host_matrix(g.data(), side.count, side.dim));
  } else {
    s.gradient_y(fs::host_matrix(g.data(), side.count, side.dim));
  }
  return g;
}

// The dense Hessian (N, N), N = count·d, column k = central difference of the gradient along e_k:
// truncation O(h²)·|∇⁴F| ≈ 1e-8, solve noise ≈ 1e-15/h ≈ 1e-11 (fp64, marginal error ≤ 1e-13).
inline std::vector<double> dense_hessian(const hvp_problem& p, bool on_x) {
  const double h = 1e-4;
  const fs::options o = tight_fp64();
  const reference::cloud& side = on_x ? p.x : p.y;
  const std::int64_t size = side.count * side.dim;
  std::vector<double> hessian(static_cast<std::size_t>(size * size));
  for (std::int64_t k = 0; k < size; ++k) {
    reference::cloud plus = side, minus = side;
    plus.points[k] += h;
    minus.points[k] -= h;
    const std::vector<double> up = on_x ? exact_gradient(plus, p.y, p, true, o) : exact_gradient(p.x, plus, p, false, o);
    const std::vector<double> down = on_x ? exact_gradient(minus, p.y, p, true, o) : exact_gradient(p.x, minus, p, false, o);
    for (std::int64_t r = 0; r < size; ++r) hessian[r * size + k] = (up[r] - down[r]) / (2 * h);
  }
  return hessian;
}

// H·A through the library (on_x: hvp_x, else hvp_y).
inline std::vector<double> library_hvp(const fs::solver& s, const reference::cloud& side, bool on_x,
                                       const std::vector<double>& direction, const fs::hvp_options& o,
                                       fs::hvp_report* report = nullptr) {
  std::vector<double> out(direction.size());
  const fs::matrix_view a = fs::host_matrix(direction.data(), side.count, side.dim);
  const fs::mutable_matrix_view product = fs::host_matrix(out.data(), side.count, side.dim);
  const fs::hvp_report r = on_x ? s.hvp_x(a, product, o) : s.hvp_y(a, product, o);
  if (report != nullptr) *report = r;
  return out;
}

// The matrix of a part, column by column from basis directions: (N, N) row-major.
inline std::vector<double> hvp_matrix(const fs::solver& s, const reference::cloud& side, bool on_x,
                                      const fs::hvp_options& o) {
  const std::int64_t size = side.count * side.dim;
  std::vector<double> matrix(static_cast<std::size_t>(size * size));
  std::vector<double> e(static_cast<std::size_t>(size), 0.0);
  for (std::int64_t k = 0; k < size; ++k) {
    e[k] = 1;
    const std::vector<double> column = library_hvp(s, side, on_x, e, o);
    e[k] = 0;
    for (std::int64_t r = 0; r < size; ++r) matrix[r * size + k] = column[r];
  }
  return matrix;
}

inline std::vector<double> random_direction(std::int64_t size, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  std::vector<double> v(static_cast<std::size_t>(size));
  for (double& t : v) t = normal(rng);
  return v;
}

inline double inner(const std::vector<double>& u, const std::vector<double>& v) {
  return std::inner_product(u.begin(), u.end(), v.begin(), 0.0);
}

// max|u − v| / max|v|
inline double relative_max_error(const std::vector<double>& u, const std::vector<double>& v) {
  return max_abs_diff(u, v) / max_abs(v);
}

}  // namespace testing_support
