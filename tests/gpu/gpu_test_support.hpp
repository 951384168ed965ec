// Helpers shared by the GPU tests.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/prepare.hpp"
#include "core/prepared_cloud.hpp"
#include "cuda/cuda_backend.hpp"
#include "flashsinkhorn/options.hpp"

namespace flashsinkhorn::detail::gpu_tests {

// A fixture whose tests skip where no GPU is visible (Base: ::testing::Test or TestWithParam<…>).
template <class Base = ::testing::Test>
class needs_gpu : public Base {
 protected:
  void SetUp() override {
    if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  }
};

// s·(max‖p‖ + max‖q‖)²: the largest cost of the (centred) problem, the scale of its potentials and
// so of their absolute error bounds.
inline double largest_cost(const prepared_problem& p) {
  const auto max_norm = [](const prepared_cloud& c) {
    double best = 0;
    for (std::int64_t i = 0; i < c.count; ++i) {
      double s = 0;
      for (std::int64_t k = 0; k < c.dim; ++k) s += c.points[i * c.dim + k] * c.points[i * c.dim + k];
      best = std::max(best, std::sqrt(s));
    }
    return best;
  };
  const double reach = max_norm(p.x) + max_norm(p.y);
  return p.cost_scale * reach * reach;
}

// The unit roundoff of a precision mode's operands (the scores' inputs): 2⁻¹¹ tf32, 2⁻⁸ bf16, 2⁻²¹ for
// fp32's 3×TF32 dots, 0 in fp64.
inline double operand_unit_roundoff(precision mode) {
  switch (mode) {
    case precision::fp64: return 0;
    case precision::fp32: return std::ldexp(1.0, -21);
    case precision::tf32: return std::ldexp(1.0, -11);
    case precision::bf16: return std::ldexp(1.0, -8);
  }
  return 0;
}

// One half-step's absolute error bound on potentials against float64, for a problem whose largest cost
// is `scale`: operand rounding 2·u_op·scale plus float32 accumulation and LSE 64·2⁻²⁴·scale (float64:
// 1e-12·scale). softmin is 1-Lipschitz in the sup norm, so k half-steps take k times this.
inline double step_tolerance_vs_reference(precision mode, double scale) {
  if (mode == precision::fp64) return 1e-12 * scale;
  return (2 * operand_unit_roundoff(mode) + 64 * std::ldexp(1.0, -24)) * scale;
}

// `count` N(shift, 1) points; weights uniform, or U[0,1) + 0.1 with every fifth one 0 (when
// count > 4); normalised, log weights −∞ where 0.
inline prepared_cloud random_cloud(std::int64_t count, std::int64_t dim, bool random_weights, std::mt19937_64& rng,
                                   double shift) {
  prepared_cloud c;
  c.count = count;
  c.dim = dim;
  std::normal_distribution<double> normal(0.0, 1.0);
  c.points.resize(static_cast<std::size_t>(count * dim));
  for (auto& v : c.points) v = normal(rng) + shift;
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  c.weights.assign(static_cast<std::size_t>(count), 1.0);
  if (random_weights)
    for (std::int64_t i = 0; i < count; ++i)
      c.weights[i] = (count > 4 && i % 5 == 3) ? 0.0 : uniform(rng) + 0.1;  // some zeros
  double total = 0;
  for (double w : c.weights) total += w;
  for (auto& w : c.weights) w /= total;
  c.log_weights.resize(c.weights.size());
  for (std::size_t i = 0; i < c.weights.size(); ++i)
    c.log_weights[i] = c.weights[i] > 0 ? std::log(c.weights[i]) : -std::numeric_limits<double>::infinity();
  return c;
}

// A pass's shape: n rows, m keys, d features, k value columns; named "n7_m97_d3_k1" in test names.
struct pass_shape {
  std::int64_t n, m, d, k;
};

inline std::string shape_name(const ::testing::TestParamInfo<pass_shape>& info) {
  const pass_shape& c = info.param;
  std::string name;
  for (const auto& [label, value] : {std::pair{"n", c.n}, {"_m", c.m}, {"_d", c.d}, {"_k", c.k}}) {
    name.append(label);
    name.append(std::to_string(value));
  }
  return name;
}

// The problem of the pass tests (plan, quadratic and one-column passes): X ~ N(0, I) and
// Y ~ N(0.4, I) with random weights (some zero), centred; ε = 0.1·d + 0.05, so that C/ε = O(10);
// a key potential g ~ N(0, (0.3ε)²) on Y. `rng` continues for the test's own draws.
struct pass_problem {
  prepared_problem problem;
  double scale = 0;  // largest_cost(problem)
  double eps = 0;
  std::vector<double> g;  // (m,)
};

inline pass_problem make_pass_problem(const pass_shape& c, std::mt19937_64& rng) {
  pass_problem out;
  out.problem.x = random_cloud(c.n, c.d, true, rng, 0.0);
  out.problem.y = random_cloud(c.m, c.d, true, rng, 0.4);
  centre_clouds(out.problem);
  out.scale = largest_cost(out.problem);
  out.eps = 0.1 * static_cast<double>(c.d) + 0.05;
  std::normal_distribution<double> normal(0.0, 1.0);
  out.g.resize(static_cast<std::size_t>(c.m));
  for (auto& v : out.g) v = 0.3 * out.eps * normal(rng);
  return out;
}

// max_i |a_i − b_i| (∞ on a NaN), the sizes expected equal.
inline double max_abs_diff(const std::vector<double>& a, const std::vector<double>& b) {
  EXPECT_EQ(a.size(), b.size());
  double worst = 0;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    const double diff = std::abs(a[i] - b[i]);
    worst = std::isnan(diff) ? INFINITY : std::max(worst, diff);
  }
  return worst;
}

}  // namespace flashsinkhorn::detail::gpu_tests
