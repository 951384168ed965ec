// The dense Schur preconditioner (cuda/dense_schur.hpp) against its definition on the host: from a
// row-stochastic s (n × m) with one dominant entry a row (a plan close to a matching), the row
// masses a and damped column sums c,
//   S = diag(max(c, (1 + 1e-10)·sᵀa) + shift) − sᵀ·diag(a)·s,
// and x = S⁻¹·r from the factor solves S·x = r to float64 rounding of an ill-conditioned S. And
// where it applies (dense_schur_fits). Skips without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "core/sparse_plan_preconditioner.hpp"
#include "cuda/cuda_backend.hpp"
#include "cuda/dense_schur.hpp"

namespace {

using namespace flashsinkhorn::detail;

TEST(dense_schur_fits, small_systems_only_where_s_needs_the_identity_pass) {
  EXPECT_TRUE(dense_schur_fits(1000, 1000, 64, false));
  EXPECT_TRUE(dense_schur_fits(2000, 2000, 64, false));
  EXPECT_TRUE(dense_schur_fits(3000, 1500, 512, false));
  EXPECT_FALSE(dense_schur_fits(1000, 2049, 3, false));        // S over 32 MiB
  EXPECT_FALSE(dense_schur_fits(10000, 2000, 64, false));      // the pass with V = I: 4·10¹⁰
  EXPECT_FALSE(dense_schur_fits(20000000, 1, 3, false));       // s over 128 MiB
  EXPECT_FALSE(dense_schur_fits(0, 10, 3, false));
}

TEST(dense_schur_fits, larger_systems_where_s_is_written_directly_and_passes_are_dear) {
  EXPECT_TRUE(dense_schur_fits(2000, 2000, 3, true));
  EXPECT_TRUE(dense_schur_fits(10000, 2000, 64, true));        // m ≤ 80·d
  EXPECT_TRUE(dense_schur_fits(10000, 10000, 128, true));      // m/d = 78: measured to win (session 58)
  EXPECT_TRUE(dense_schur_fits(10000, 8000, 100, true));       // m = 80·d
  EXPECT_FALSE(dense_schur_fits(10000, 8001, 100, true));      // m > 80·d
  EXPECT_TRUE(dense_schur_fits(10000, 10000, 512, true));
  EXPECT_TRUE(dense_schur_fits(10000, 10000, 1024, true));     // 1.5·10¹² float64 operations
  EXPECT_FALSE(dense_schur_fits(10000, 10000, 64, true));      // m > 80·d: the build outweighs the passes
  EXPECT_FALSE(dense_schur_fits(10000, 10000, 3, true));
  EXPECT_FALSE(dense_schur_fits(10000, 2000, 64, false));      // s by the pass with V = I
  EXPECT_FALSE(dense_schur_fits(12289, 12289, 1024, true));    // S over 1.2 GB
  EXPECT_FALSE(dense_schur_fits(200000, 1000, 64, true));      // s over 1 GiB
  EXPECT_FALSE(dense_schur_fits(12000, 11000, 8192, true));    // the build over 3·10¹²
  EXPECT_FALSE(dense_schur_fits(10, 0, 3, true));
}

TEST(dense_schur_fits, sparse_never_and_dense_without_the_pass_cost_condition) {
  EXPECT_FALSE(dense_schur_fits(1000, 1000, 64, true, schur_solve::sparse));
  EXPECT_FALSE(dense_schur_fits(1000, 1000, 64, false, schur_solve::sparse));
  EXPECT_TRUE(dense_schur_fits(10000, 10000, 64, true, schur_solve::dense));   // m > 80·d, factored anyway
  EXPECT_TRUE(dense_schur_fits(10000, 10000, 3, true, schur_solve::dense));
  EXPECT_FALSE(dense_schur_fits(10000, 10000, 64, false, schur_solve::dense));  // s by the pass with V = I
  EXPECT_FALSE(dense_schur_fits(12289, 12289, 3, true, schur_solve::dense));    // the caps stay: S over 1.2 GB
  EXPECT_FALSE(dense_schur_fits(200000, 1000, 3, true, schur_solve::dense));    // s over 1 GiB
}

TEST(dense_schur_gpu_test, solves_its_definition) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  const std::int64_t n = 700, m = 500;
  std::mt19937_64 rng(53);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  std::uniform_int_distribution<int> key(0, static_cast<int>(m) - 1);
  std::vector<double> s(static_cast<std::size_t>(n * m)), a(static_cast<std::size_t>(n)), c(static_cast<std::size_t>(m), 0.0);
  for (std::int64_t i = 0; i < n; ++i) {
    a[i] = (uniform(rng) + 0.1) / static_cast<double>(n);
    double total = 0;
    for (std::int64_t j = 0; j < m; ++j) total += s[i * m + j] = 1e-6 * uniform(rng);
    const int dominant = key(rng);
    s[i * m + dominant] += 1.0;
    total += 1.0;
    for (std::int64_t j = 0; j < m; ++j) s[i * m + j] /= total;
    for (std::int64_t j = 0; j < m; ++j) c[j] += a[i] * s[i * m + j];
  }
  for (double& v : c) v *= 1.001;  // damped
  const double shift = 1e-10 * *std::max_element(c.begin(), c.end());

  // S on the host, row-major (symmetric).
  std::vector<double> coupling(static_cast<std::size_t>(m), 0.0), host_s(static_cast<std::size_t>(m * m), 0.0);
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < m; ++j) {
      coupling[j] += a[i] * s[i * m + j];
      for (std::int64_t l = 0; l < m; ++l) host_s[j * m + l] -= a[i] * s[i * m + j] * s[i * m + l];
    }
  for (std::int64_t j = 0; j < m; ++j) host_s[j * m + j] += sparse_plan_diagonal(c[j], coupling[j], shift);

  dense_schur_buffers buffers;
  double* softmax = reserve(buffers.softmax, s.size(), nullptr);
  ASSERT_EQ(cudaMemcpy(softmax, s.data(), s.size() * sizeof(double), cudaMemcpyHostToDevice), cudaSuccess);
  const dense_schur factor(buffers, n, m, a, c, shift, nullptr);
  ASSERT_TRUE(factor.factored());

  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<double> r(static_cast<std::size_t>(m));
  for (double& v : r) v = normal(rng);
  device_buffer<double> d_r(r.size(), nullptr), d_x(r.size(), nullptr);
  ASSERT_EQ(cudaMemcpy(d_r.data(), r.data(), r.size() * sizeof(double), cudaMemcpyHostToDevice), cudaSuccess);
  factor.solve(d_r.data(), d_x.data(), nullptr);
  std::vector<double> x(r.size());
  ASSERT_EQ(cudaMemcpy(x.data(), d_x.data(), x.size() * sizeof(double), cudaMemcpyDeviceToHost), cudaSuccess);
  double residual = 0, norm = 0;
  for (std::int64_t j = 0; j < m; ++j) {
    double sx = 0;
    for (std::int64_t l = 0; l < m; ++l) sx += host_s[j * m + l] * x[l];
    residual += (r[j] - sx) * (r[j] - sx);
    norm += r[j] * r[j];
  }
  EXPECT_LE(std::sqrt(residual / norm), 1e-8);
}

}  // namespace
