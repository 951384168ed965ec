// The sparse_plan preconditioner on the device, piece by piece:
//   - the top-entries pass (cuda/plan_top_entries.hpp) against a float64 host scan of the same
//     stored points: every entry clearly among a row's 8 largest is found, with its softmax value;
//   - the cooperative solve of S_k (cuda/sparse_schur.hpp) reaches its inner tolerance on S_k as
//     the host rebuilds it from the same entries;
//   - every entry kept (the dense preconditioner, cuda/dense_schur.hpp): launch_plan_softmax writes
//     the whole softmax from float points, as the float64 host scan forms it.
// (schur_cg_gpu_test.cpp checks the whole preconditioned CG against the host's.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "cuda/cuda_backend.hpp"
#include "cuda/device_buffer.hpp"
#include "cuda/plan_rows_launch.hpp"
#include "cuda/plan_top_entries.hpp"
#include "cuda/sparse_schur.hpp"
#include "cuda/tile_config.hpp"
#include "flashsinkhorn/options.hpp"
#include "gpu/gpu_test_support.hpp"
#include "gpu/stored_cloud.hpp"

namespace {

using namespace flashsinkhorn::detail;

using stored_cloud::download;
using stored_cloud::upload;
using host_cloud = stored_cloud::host_cloud<float>;
using uploaded_cloud = stored_cloud::uploaded_cloud<float>;
constexpr auto random_cloud = stored_cloud::random_cloud<float>;

// Row i's softmax s_ij = softmax_j((h_j − C_ij)/ε + log w_j) in float64 from the float points
// (and its normaliser, lse_i = log Σ_j exp((h_j − C_ij)/ε + log w_j), where `lse` is given).
std::vector<double> row_softmax(const host_cloud& x, const host_cloud& y, const std::vector<double>& h, double s,
                                double eps, std::int64_t i, double* lse = nullptr) {
  std::vector<double> t(static_cast<std::size_t>(y.count));
  for (std::int64_t j = 0; j < y.count; ++j) {
    double dot = 0;
    for (std::int64_t k = 0; k < x.dim; ++k) dot += double{x.points[i * x.dim + k]} * y.points[j * y.dim + k];
    t[j] = (h[j] - (x.scaled_sq_norm[i] + y.scaled_sq_norm[j] - 2 * s * dot)) / eps + y.log_weights[j];
  }
  const double top = *std::max_element(t.begin(), t.end());
  double sum = 0;
  for (double v : t) sum += std::exp(v - top);
  for (double& v : t) v = std::exp(v - top) / sum;
  if (lse != nullptr) *lse = top + std::log(sum);
  return t;
}

// 300 rows N(0, 1) against 517 keys N(0.3, 1) of `dim` coordinates (a partial row block and key
// tile, every seventh weight 0), cost scale 0.5, ε = 2 and key potentials h ~ N(0, 0.6): scores of
// size ~10, as the host scans below form them.
struct scan_problem {
  double s = 0.5, eps = 2.0;
  host_cloud x, y;
  std::vector<double> h;
  scan_problem(std::int64_t dim, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    x = random_cloud(300, dim, 0.0, s, rng);
    y = random_cloud(517, dim, 0.3, s, rng);
    std::normal_distribution<double> normal(0.0, 0.3 * eps);
    h.resize(static_cast<std::size_t>(y.count));
    for (double& v : h) v = normal(rng);
  }
};

// The problem on the device, and the arguments every pass takes from it (clouds, h, scale, ε).
struct uploaded_problem {
  uploaded_cloud rows, keys;
  device_buffer<double> potential;
  explicit uploaded_problem(const scan_problem& p) : rows(p.x), keys(p.y), potential(upload(p.h)) {}
  template <class Args>
  [[nodiscard]] Args pass_args(const scan_problem& p) const {
    Args args;
    args.rows = rows.view;
    args.keys = keys.view;
    args.key_potential = potential.data();
    args.cost_scale = p.s;
    args.eps = p.eps;
    return args;
  }
};

class sparse_plan_gpu_test : public gpu_tests::needs_gpu<> {};

// n = 300 rows against 517 keys (several key splits, a partial last tile), d = 20 (a partial
// dimension chunk), zero-weight keys (scores −∞, never kept).
TEST_F(sparse_plan_gpu_test, top_entries_match_a_float64_scan) {
  const scan_problem problem(20, 5);
  const auto& [s, eps, x, y, h] = problem;
  const uploaded_problem on_device(problem);
  device_buffer<int> entry_keys(static_cast<std::size_t>(x.count * kTopEntries), nullptr);
  device_buffer<double> entry_values(static_cast<std::size_t>(x.count * kTopEntries), nullptr);
  device_buffer<unsigned char> scratch;
  auto args = on_device.pass_args<plan_top_entries_args>(problem);
  args.sm_count = 16;  // splits the keys
  args.entry_keys = entry_keys.data();
  args.entry_values = entry_values.data();
  ASSERT_EQ(launch_plan_top_entries(flashsinkhorn::precision::fp32, args, scratch, nullptr), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<int> got_keys = download(entry_keys);
  const std::vector<double> got_values = download(entry_values);

  int clear_entries = 0;
  for (std::int64_t i = 0; i < x.count; ++i) {
    const std::vector<double> want = row_softmax(x, y, h, s, eps, i);
    std::vector<double> sorted = want;
    std::sort(sorted.begin(), sorted.end(), std::greater<>());
    const int* row_keys = got_keys.data() + i * kTopEntries;
    const double* row_values = got_values.data() + i * kTopEntries;
    for (int e = 0; e < kTopEntries; ++e) {
      ASSERT_GE(row_keys[e], 0) << "row " << i;  // (every row has ≥ 8 keys of positive weight)
      ASSERT_LT(row_keys[e], y.count);
      EXPECT_GT(y.weights[row_keys[e]], 0) << "a zero-weight key kept, row " << i;
      EXPECT_NEAR(row_values[e], want[row_keys[e]], 1e-4 * want[row_keys[e]] + 1e-12) << "row " << i;
      if (e > 0) {
        EXPECT_LE(row_values[e], row_values[e - 1] * (1 + 1e-4)) << "not descending, row " << i;
      }
    }
    // Every entry clearly above the 9th largest is kept.
    for (std::int64_t j = 0; j < y.count; ++j) {
      if (!(want[j] > sorted[kTopEntries] * 1.01)) continue;
      ++clear_entries;
      EXPECT_TRUE(std::find(row_keys, row_keys + kTopEntries, j) != row_keys + kTopEntries)
          << "row " << i << " key " << j;
    }
  }
  EXPECT_GT(clear_entries, 300 * 6);  // the check above is not vacuous
}

// 300 rows against 517 keys (partial row block and key tile), d = 12, zero-weight keys (s = 0
// there): s_ij and lse_i in float64 from the stored float points in fp32 (whatever its own passes
// compute in), to float64 rounding of scores of size ~10; the tensor-core modes refused
// (plan_softmax_applies).
TEST_F(sparse_plan_gpu_test, softmax_rows_match_a_float64_scan) {
  const scan_problem problem(12, 54);
  const auto& [s, eps, x, y, h] = problem;
  const uploaded_problem on_device(problem);
  device_buffer<double> lse(static_cast<std::size_t>(x.count), nullptr);
  device_buffer<double> softmax(static_cast<std::size_t>(x.count * y.count), nullptr);
  auto args = on_device.pass_args<plan_rows_launch_args>(problem);
  args.lse = lse.data();
  args.weighted = softmax.data();
  ASSERT_EQ(cudaMemset(softmax.data(), 0xff, softmax.bytes()), cudaSuccess);  // NaN where nothing is written
  ASSERT_EQ(cudaMemset(lse.data(), 0xff, lse.bytes()), cudaSuccess);
  ASSERT_EQ(launch_plan_softmax(flashsinkhorn::precision::fp32, args, nullptr), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<double> got = download(softmax), got_lse = download(lse);
  for (std::int64_t i = 0; i < x.count; ++i) {
    double want_lse = 0;
    const std::vector<double> want = row_softmax(x, y, h, s, eps, i, &want_lse);
    double total = 0;
    for (std::int64_t j = 0; j < y.count; ++j) {
      const double entry = got[static_cast<std::size_t>(i * y.count + j)];
      total += entry;
      if (y.weights[j] == 0) {
        EXPECT_EQ(entry, 0.0) << "row " << i << " key " << j;
      }
      EXPECT_NEAR(entry, want[j], 1e-11 * want[j] + 1e-300) << "row " << i << " key " << j;
    }
    EXPECT_NEAR(total, 1.0, 1e-11) << "row " << i;
    EXPECT_NEAR(got_lse[static_cast<std::size_t>(i)], want_lse, 1e-12 * std::abs(want_lse) + 1e-12) << "row " << i;
  }
  EXPECT_EQ(launch_plan_softmax(flashsinkhorn::precision::tf32, args, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(launch_plan_softmax(flashsinkhorn::precision::bf16, args, nullptr), cudaErrorInvalidValue);
}

// S_k from random entries (some missing), then x = S_k⁻¹·r by the cooperative CG: the host's
// residual of x on the same S_k is within the inner tolerance.
TEST_F(sparse_plan_gpu_test, sparse_schur_solve_reaches_its_tolerance) {
  std::mt19937_64 rng(9);
  const std::int64_t n = 900, m = 700;
  const int k = kTopEntries;
  std::uniform_int_distribution<int> key(0, static_cast<int>(m) - 1);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  std::vector<int> keys(static_cast<std::size_t>(n * k));
  std::vector<double> values(keys.size()), a(static_cast<std::size_t>(n)), c(static_cast<std::size_t>(m), 0.0);
  for (std::int64_t i = 0; i < n; ++i) {
    a[i] = (uniform(rng) + 0.1) / static_cast<double>(n);
    double rest = 1;
    std::vector<int> used;
    for (int u = 0; u < k; ++u) {
      int j = key(rng);
      while (std::find(used.begin(), used.end(), j) != used.end()) j = key(rng);
      used.push_back(j);
      const bool missing = i % 11 == 0 && u >= 5;
      keys[i * k + u] = missing ? -1 : j;
      const double share = u == k - 1 ? rest : rest * (0.5 + 0.4 * uniform(rng));  // s_i sums to ≤ 1
      rest -= share;
      values[i * k + u] = missing ? 0.0 : share;
      if (!missing) c[j] += a[i] * share;
    }
  }
  for (double& v : c) v = v * 1.01 + 1e-6;  // the damped column sums (every column positive)
  const device_buffer<int> d_keys = upload(keys);
  const device_buffer<double> d_values = upload(values);
  sparse_schur_buffers buffers;
  const sparse_schur s_k(buffers, d_keys.data(), d_values.data(), n, k, a, c, 0.0, 0, nullptr);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<double> r(static_cast<std::size_t>(m));
  for (double& v : r) v = normal(rng);
  const device_buffer<double> d_r = upload(r);
  device_buffer<double> d_x(static_cast<std::size_t>(m), nullptr);
  s_k.solve(d_r.data(), d_x.data(), nullptr, nullptr);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<double> x = download(d_x);

  // ‖r − S_k·x‖ / ‖r‖ on the host.
  const auto relative_residual = [&](const std::vector<double>& solution) {
    std::vector<double> sx(static_cast<std::size_t>(m));
    for (std::int64_t j = 0; j < m; ++j) sx[j] = c[j] * solution[j];
    for (std::int64_t i = 0; i < n; ++i) {
      double t = 0;
      for (int u = 0; u < k; ++u)
        if (keys[i * k + u] >= 0) t += values[i * k + u] * solution[keys[i * k + u]];
      for (int u = 0; u < k; ++u)
        if (keys[i * k + u] >= 0) sx[keys[i * k + u]] -= a[i] * values[i * k + u] * t;
    }
    double residual = 0, norm = 0;
    for (std::int64_t j = 0; j < m; ++j) {
      residual += (r[j] - sx[j]) * (r[j] - sx[j]);
      norm += r[j] * r[j];
    }
    return std::sqrt(residual / norm);
  };
  EXPECT_LE(relative_residual(x), sparse_schur::kInnerTolerance);
  EXPECT_GT(relative_residual(x), 0.0);
  const int loose_iterations = s_k.last_iterations(nullptr);
  EXPECT_GT(loose_iterations, 0);
  // Far tighter: the recurrence residual (Chronopoulos–Gear) still tracks the true one.
  s_k.solve(d_r.data(), d_x.data(), nullptr, nullptr, 1e-10, 5000);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_LE(relative_residual(download(d_x)), 1e-9);
  EXPECT_GT(s_k.last_iterations(nullptr), loose_iterations);
  EXPECT_LT(s_k.last_iterations(nullptr), 5000);
  // And the stream-ordered skip flag: set, nothing is written.
  const device_buffer<int> skip = upload(std::vector<int>{1});
  device_buffer<double> untouched = upload(std::vector<double>(static_cast<std::size_t>(m), 7.0));
  s_k.solve(d_r.data(), untouched.data(), skip.data(), nullptr);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  for (double v : download(untouched)) ASSERT_EQ(v, 7.0);
}

}  // namespace
