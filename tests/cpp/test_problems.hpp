// Shared test helpers: a reference cloud pair as a flashsinkhorn::problem, and tolerances per mode.
#pragma once

#include <string>

#include "flashsinkhorn/flashsinkhorn.hpp"
#include "reference/dense_sinkhorn.hpp"

namespace testing_support {

inline flashsinkhorn::problem make_problem(const reference::cloud& x, const reference::cloud& y, double eps,
                                           double cost_scale) {
  flashsinkhorn::problem p;
  p.x = flashsinkhorn::host_matrix(x.points.data(), x.count, x.dim);
  p.y = flashsinkhorn::host_matrix(y.points.data(), y.count, y.dim);
  p.a = flashsinkhorn::host_vector(x.weights.data(), x.count);
  p.b = flashsinkhorn::host_vector(y.weights.data(), y.count);
  p.eps = eps;
  p.cost_scale = cost_scale;
  return p;
}

// A fixed number of iterations, no stopping: the state after exactly `iterations` is comparable.
inline flashsinkhorn::options fixed_iterations(int iterations, flashsinkhorn::precision mode) {
  flashsinkhorn::options o;
  o.device = flashsinkhorn::device_kind::cpu;
  o.precision = mode;
  o.max_iterations = iterations;
  o.tolerance = 0;
  return o;
}

// Relative tolerance on potentials/values, against their largest magnitude.
//   fp64, fp32: unit roundoff × 256, a growth factor covering the d-term dot products, the log m
//               LSE sums and error propagation through the iterations on these problems;
//   tf32, bf16: the operands are rounded (unit roundoff u = 2⁻¹¹, 2⁻⁸), which perturbs each
//               C_ij = s‖x‖² + s‖y‖² − 2s·x·y by ≤ ~4u·s(‖x‖² + ‖y‖²) ≈ 4u·C for centred clouds;
//               the reference runs on exact inputs, so allow 8u.
inline double relative_tolerance(flashsinkhorn::precision mode) {
  switch (mode) {
    case flashsinkhorn::precision::fp64: return 256 * 1.1e-16;
    case flashsinkhorn::precision::fp32: return 256 * 6e-8;
    case flashsinkhorn::precision::tf32: return 8 * 4.9e-4;
    case flashsinkhorn::precision::bf16: return 8 * 3.9e-3;
  }
  return 0;
}

inline std::string describe(std::int64_t n, std::int64_t m, std::int64_t d, std::uint64_t seed) {
  return "n=" + std::to_string(n) + " m=" + std::to_string(m) + " d=" + std::to_string(d) + " seed=" + std::to_string(seed);
}

inline double max_abs_diff(const std::vector<double>& a, const std::vector<double>& b) {
  double m = 0;
  for (std::size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(a[i] - b[i]));
  return m;
}

inline double max_abs(const std::vector<double>& a) {
  double m = 0;
  for (double v : a) m = std::max(m, std::abs(v));
  return m;
}

}  // namespace testing_support
