// The fp64 plan pass by DGEMMs (cuda/plan_gemm_pass.hpp) against the SIMT pass
// (plan_rows_kernel.cuh) on the same stored float64 points: lse, the weighted values (strided, one
// column and several) and the cost to float64 rounding — the two differ only in the order each dot
// product is summed — over several row blocks with a partial last one, zero-weight keys (W = 0
// there) and a partial key tile; the softmax it writes for the dense preconditioner against the
// SIMT pass with V = I_m; its refusals. The SIMT side runs without GEMM scratch, so it is the SIMT
// kernel under FLASHSINKHORN_FLOAT64_PASS=gemm too.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "cuda/cuda_backend.hpp"
#include "cuda/device_buffer.hpp"
#include "cuda/kernel_variant.hpp"
#include "cuda/plan_gemm_pass.hpp"
#include "cuda/plan_rows_launch.hpp"
#include "flashsinkhorn/error.hpp"
#include "flashsinkhorn/options.hpp"
#include "gpu/gpu_test_support.hpp"
#include "gpu/stored_cloud.hpp"

namespace {

using namespace flashsinkhorn::detail;
using stored_cloud::download;
using stored_cloud::upload;

// 700 rows N(0, 1) against 900 keys N(0.3, 1) in 96 coordinates, cost scale 0.5, ε = 4, key
// potentials h ~ N(0, 2): plans with tens of significant entries a row.
struct wide_problem {
  double s = 0.5, eps = 4.0;
  stored_cloud::host_cloud<double> x, y;
  std::vector<double> h;
  stored_cloud::uploaded_cloud<double> rows, keys;
  device_buffer<double> potential;

  static wide_problem make() {
    std::mt19937_64 rng(2026);
    auto x = stored_cloud::random_cloud<double>(700, 96, 0.0, 0.5, rng);
    auto y = stored_cloud::random_cloud<double>(900, 96, 0.3, 0.5, rng);
    std::normal_distribution<double> normal(0.0, 2.0);
    std::vector<double> h(900);
    for (double& v : h) v = normal(rng);
    return wide_problem(std::move(x), std::move(y), std::move(h));
  }
  wide_problem(stored_cloud::host_cloud<double> x_, stored_cloud::host_cloud<double> y_, std::vector<double> h_)
      : x(std::move(x_)), y(std::move(y_)), h(std::move(h_)), rows(x), keys(y), potential(upload(h)) {}

  [[nodiscard]] plan_rows_launch_args args() const {
    plan_rows_launch_args a;
    a.rows = rows.view;
    a.keys = keys.view;
    a.key_potential = potential.data();
    a.cost_scale = s;
    a.eps = eps;
    return a;
  }
};

// A pass's outputs, NaN where nothing was written.
struct pass_outputs {
  device_buffer<double> lse, weighted, cost;
  pass_outputs(std::int64_t rows, std::int64_t k)
      : lse(static_cast<std::size_t>(rows), nullptr),
        weighted(static_cast<std::size_t>(std::max<std::int64_t>(rows * k, 1)), nullptr),
        cost(static_cast<std::size_t>(rows), nullptr) {
    for (device_buffer<double>* b : {&lse, &weighted, &cost})
      EXPECT_EQ(cudaMemset(b->data(), 0xff, b->bytes()), cudaSuccess);
  }
  void into(plan_rows_launch_args& a, bool with_cost) {
    a.lse = lse.data();
    a.weighted = a.k > 0 ? weighted.data() : nullptr;
    a.cost = with_cost ? cost.data() : nullptr;
  }
};

double max_abs(const std::vector<double>& v) {
  double top = 0;
  for (double e : v) top = std::max(top, std::abs(e));
  return top;
}

class plan_gemm_pass_test : public gpu_tests::needs_gpu<> {};

TEST_F(plan_gemm_pass_test, matches_the_simt_pass) {
  const wide_problem problem = wide_problem::make();
  const std::int64_t n = problem.x.count, m = problem.y.count;
  // Scratch for 128 rows: six blocks, the last of 60.
  device_buffer<double> scratch(static_cast<std::size_t>(128 * m), nullptr);
  struct pass_shape { std::int64_t k, stride; bool cost; };
  for (const pass_shape shape : {pass_shape{0, 0, false}, pass_shape{0, 0, true}, pass_shape{1, 3, false},
                                 pass_shape{5, 8, true}}) {
    std::mt19937_64 rng(static_cast<std::uint64_t>(shape.k * 10 + shape.stride));
    std::normal_distribution<double> normal(0.0, 1.0);
    std::vector<double> values(static_cast<std::size_t>(std::max<std::int64_t>(m * shape.stride, 1)));
    for (double& v : values) v = normal(rng);
    const device_buffer<double> device_values = upload(values);

    plan_rows_launch_args simt = problem.args();
    simt.k = shape.k;
    simt.values = shape.k > 0 ? device_values.data() : nullptr;
    simt.values_stride = shape.stride;
    pass_outputs by_simt(n, shape.k), by_gemm(n, shape.k);
    by_simt.into(simt, shape.cost);
    ASSERT_EQ(launch_plan_rows(flashsinkhorn::precision::fp64, simt, nullptr), cudaSuccess);

    plan_rows_launch_args gemm = simt;
    by_gemm.into(gemm, shape.cost);
    gemm.gemm_scratch = scratch.data();
    gemm.gemm_scratch_elements = static_cast<std::int64_t>(scratch.size());
    enqueue_plan_gemm_rows(gemm, nullptr);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);

    const std::vector<double> lse_simt = download(by_simt.lse), lse_gemm = download(by_gemm.lse);
    for (std::int64_t i = 0; i < n; ++i)
      ASSERT_NEAR(lse_gemm[i], lse_simt[i], 1e-11 * std::max(1.0, std::abs(lse_simt[i]))) << "k " << shape.k << " row " << i;
    if (shape.cost) {
      const std::vector<double> cost_simt = download(by_simt.cost), cost_gemm = download(by_gemm.cost);
      for (std::int64_t i = 0; i < n; ++i)
        ASSERT_NEAR(cost_gemm[i], cost_simt[i], 1e-11 * std::abs(cost_simt[i])) << "k " << shape.k << " row " << i;
    }
    if (shape.k > 0) {
      const std::vector<double> weighted_simt = download(by_simt.weighted), weighted_gemm = download(by_gemm.weighted);
      const double scale = max_abs(values);
      for (std::size_t e = 0; e < weighted_simt.size(); ++e)
        ASSERT_NEAR(weighted_gemm[e], weighted_simt[e], 1e-11 * scale) << "k " << shape.k << " entry " << e;
    }
  }
}

// The softmax of the dense preconditioner: s_ij = exp(S_ij − lse_i), rows summing to 1, 0 on the
// zero-weight keys — the SIMT pass with V = I_m computes the same rows.
TEST_F(plan_gemm_pass_test, softmax_matches_the_simt_pass_on_the_identity) {
  const wide_problem problem = wide_problem::make();
  const std::int64_t n = problem.x.count, m = problem.y.count;
  std::vector<double> identity(static_cast<std::size_t>(m * m), 0.0);
  for (std::int64_t j = 0; j < m; ++j) identity[static_cast<std::size_t>(j * m + j)] = 1.0;
  const device_buffer<double> device_identity = upload(identity);

  plan_rows_launch_args simt = problem.args();
  simt.k = m;
  simt.values = device_identity.data();
  pass_outputs by_simt(n, m), by_gemm(n, m);
  by_simt.into(simt, false);
  ASSERT_EQ(launch_plan_rows(flashsinkhorn::precision::fp64, simt, nullptr), cudaSuccess);
  plan_rows_launch_args gemm = problem.args();
  gemm.k = m;
  by_gemm.into(gemm, false);
  enqueue_plan_gemm_softmax(gemm, nullptr);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);

  const std::vector<double> want = download(by_simt.weighted), got = download(by_gemm.weighted);
  const std::vector<double> lse_want = download(by_simt.lse), lse_got = download(by_gemm.lse);
  for (std::int64_t i = 0; i < n; ++i) {
    double total = 0;
    for (std::int64_t j = 0; j < m; ++j) {
      const double entry = got[static_cast<std::size_t>(i * m + j)];
      total += entry;
      if (problem.y.weights[j] == 0) {
        ASSERT_EQ(entry, 0.0) << "row " << i << " key " << j;
      }
      ASSERT_NEAR(entry, want[static_cast<std::size_t>(i * m + j)], 1e-12) << "row " << i << " key " << j;
    }
    ASSERT_NEAR(total, 1.0, 1e-12) << "row " << i;
    ASSERT_NEAR(lse_got[i], lse_want[i], 1e-11 * std::max(1.0, std::abs(lse_want[i]))) << "row " << i;
  }
}

TEST_F(plan_gemm_pass_test, refuses_short_scratch_and_directions) {
  const wide_problem problem = wide_problem::make();
  device_buffer<double> scratch(static_cast<std::size_t>(63 * problem.y.count), nullptr);
  pass_outputs out(problem.x.count, 0);
  plan_rows_launch_args a = problem.args();
  out.into(a, false);
  a.gemm_scratch = scratch.data();
  a.gemm_scratch_elements = static_cast<std::int64_t>(scratch.size());  // 63 rows of 700: too few
  EXPECT_THROW(enqueue_plan_gemm_rows(a, nullptr), flashsinkhorn::invalid_argument);
  EXPECT_FALSE(plan_gemm_pass_applies(flashsinkhorn::precision::fp64, a));
  device_buffer<double> directions(static_cast<std::size_t>(problem.x.count * problem.x.dim), nullptr);
  device_buffer<double> enough(static_cast<std::size_t>(64 * problem.y.count), nullptr);
  a.gemm_scratch = enough.data();
  a.gemm_scratch_elements = static_cast<std::int64_t>(enough.size());
  a.directions = directions.data();
  EXPECT_THROW(enqueue_plan_gemm_rows(a, nullptr), flashsinkhorn::invalid_argument);
  EXPECT_FALSE(plan_gemm_pass_applies(flashsinkhorn::precision::fp64, a));
  a.directions = nullptr;  // the other modes never: their points are not float64
  EXPECT_FALSE(plan_gemm_pass_applies(flashsinkhorn::precision::tf32, a));
  EXPECT_FALSE(plan_gemm_pass_applies(flashsinkhorn::precision::fp32, a));
}

// (host rules: they run without a GPU too)
TEST(plan_gemm_pass_enabled, on_wide_float64_rows_by_default) {
  using flashsinkhorn::precision;
  EXPECT_FALSE(plan_gemm_pass_enabled(precision::tf32, 1024));  // points not stored as double
  EXPECT_FALSE(plan_gemm_pass_enabled(precision::fp32, 1024));
  switch (float64_pass_choice()) {  // (the GPU tests' variant pass sets FLASHSINKHORN_FLOAT64_PASS=gemm)
    case float64_pass::automatic:
      EXPECT_TRUE(plan_gemm_pass_enabled(precision::fp64, 512));
      EXPECT_FALSE(plan_gemm_pass_enabled(precision::fp64, 256));
      break;
    case float64_pass::gemm: EXPECT_TRUE(plan_gemm_pass_enabled(precision::fp64, 8)); break;
    case float64_pass::simt: EXPECT_FALSE(plan_gemm_pass_enabled(precision::fp64, 1024)); break;
  }
}

TEST(plan_gemm_scratch, holds_the_largest_block_within_256_mib) {
  EXPECT_EQ(plan_gemm_scratch_elements(10000, 10000), std::int64_t{3355} * 10000);  // 2²⁵ doubles / 10⁴
  EXPECT_EQ(plan_gemm_scratch_elements(700, 900), std::int64_t{700} * 900);         // every row
  EXPECT_EQ(plan_gemm_scratch_elements(1000, 524288), kPlanGemmMinBlockRows * 524288);  // 64 rows fit
  EXPECT_EQ(plan_gemm_scratch_elements(1000, 524289), 0);      // fewer than 64 rows fit: the SIMT pass
  EXPECT_EQ(plan_gemm_scratch_elements(30, 10000000), 0);      // fewer than the 30 rows fit
  EXPECT_EQ(plan_gemm_scratch_elements(30, 1000000), std::int64_t{30} * 1000000);  // every row, 229 MiB
  EXPECT_EQ(plan_gemm_scratch_elements(0, 5), 0);
}

}  // namespace
