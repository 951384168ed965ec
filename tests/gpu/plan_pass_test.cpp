// The tensor-core plan passes (plan_mma_kernel.cuh with the cost; without it, on sm_90a,
// plan_wgmma_kernel.cuh and plan_wgmma_streamed_kernel.cuh) against the float64 CPU backend and the
// CPU backend of the same mode, for value widths from 1 to 2,048 (one to 32 column tiles, paired
// halves), no values at all, d from 1 to 512, and a math fact: with a column of ones in V, P̃·1 = 1 (the rows of the
// normalised plan sum to one in every mode, because the row sum adds the same rounded P the product sees), up to float
// summation over the m keys.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/backend.hpp"
#include "core/prepare.hpp"
#include "cpu/cpu_backend.hpp"
#include "cuda/cuda_backend.hpp"
#include "flashsinkhorn/options.hpp"
#include "gpu/gpu_test_support.hpp"

namespace {

using flashsinkhorn::precision;
using namespace flashsinkhorn::detail;

double unit_roundoff(precision mode) {
  switch (mode) {
    case precision::fp64:
      return 0x1p-53;
    case precision::fp32:
      return 0x1p-21;  // 3×TF32 drops the lo·lo term
    case precision::tf32:
      return 0x1p-11;
    case precision::bf16:
      return 0x1p-8;
  }
  return 0;
}

using gpu_tests::max_abs_diff;

using plan_case = gpu_tests::pass_shape;

class plan_pass_test : public gpu_tests::needs_gpu<::testing::TestWithParam<plan_case>> {};

TEST_P(plan_pass_test, matches_float64_and_the_cpu_backend) {
  const plan_case c = GetParam();
  std::mt19937_64 rng(static_cast<std::uint64_t>(31 * c.n + 17 * c.m + 7 * c.d + c.k));
  const gpu_tests::pass_problem made = gpu_tests::make_pass_problem(c, rng);
  const prepared_problem& problem = made.problem;
  const double scale = made.scale, eps = made.eps;
  const std::vector<double>& g = made.g;

  // Values whose column 0 is all ones.
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<double> values(static_cast<std::size_t>(c.m * c.k));
  for (std::int64_t j = 0; j < c.m; ++j)
    for (std::int64_t col = 0; col < c.k; ++col) values[j * c.k + col] = col == 0 ? 1.0 : normal(rng);
  double v_max = 1;
  for (double v : values) v_max = std::max(v_max, std::abs(v));
  // With the cost the pass runs the mma.sync kernel; without it (and with values) the Hopper
  // kernels on sm_90a (plan_rows_launch.hpp): both are checked.
  const plan_rows_request request{side::x, side::y, slot::g, eps, c.k > 0 ? values.data() : nullptr, c.k, true};
  plan_rows_request without_cost = request;
  without_cost.want_cost = false;

  auto exact = make_cpu_backend(problem, precision::fp64, 0);
  exact->write_potential(slot::g, g);
  const plan_rows_result want = exact->plan_rows(request);

  for (const precision mode : {precision::fp32, precision::tf32, precision::bf16}) {
    const std::string mode_name(flashsinkhorn::to_string(mode));
    SCOPED_TRACE(mode_name);
    auto gpu = make_cuda_backend(problem, mode, 0);
    auto cpu = make_cpu_backend(problem, mode, 0);
    gpu->write_potential(slot::g, g);
    cpu->write_potential(slot::g, g);
    const plan_rows_result got = gpu->plan_rows(request);
    const plan_rows_result same_mode = cpu->plan_rows(request);

    // Against float64: the operands' rounding moves each score by ≤ 2u·scale/ε (plus float
    // arithmetic); each weight then by that relative amount twice (its score and the LSE), plus the
    // rounding of P and of V in the product (tf32 in the tf32 and bf16 modes). Against the CPU
    // backend of the same mode the operands are the same: only float arithmetic separates the
    // scores, and the tolerance is that much tighter.
    const double u = unit_roundoff(mode);
    const double u_product = mode == precision::fp32 ? u : 0x1p-11;
    const double float_score_tol = 64 * 0x1p-24 * scale / eps;
    const double score_tol = 2 * u * scale / eps + float_score_tol;
    const double weight_tol = std::expm1(2 * score_tol) + 2 * u_product + 1e-6;
    const double weight_tol_cpu = std::expm1(2 * float_score_tol) + 2 * u_product + 1e-5;
    EXPECT_LE(max_abs_diff(got.lse, want.lse), score_tol) << "lse vs float64";
    EXPECT_LE(max_abs_diff(got.lse, same_mode.lse), float_score_tol) << "lse vs CPU backend";
    EXPECT_LE(max_abs_diff(got.cost, want.cost), weight_tol * scale) << "cost vs float64";
    EXPECT_LE(max_abs_diff(got.cost, same_mode.cost), weight_tol_cpu * scale) << "cost vs CPU backend";
    ASSERT_EQ(got.weighted.size(), static_cast<std::size_t>(c.n * c.k));
    EXPECT_LE(max_abs_diff(got.weighted, want.weighted), weight_tol * v_max) << "weighted vs float64";
    EXPECT_LE(max_abs_diff(got.weighted, same_mode.weighted), weight_tol_cpu * v_max) << "weighted vs CPU backend";
    double worst_row_mass = 0;
    for (std::int64_t i = 0; i < c.n && c.k > 0; ++i)
      worst_row_mass = std::max(worst_row_mass, std::abs(got.weighted[i * c.k] - 1.0));
    EXPECT_LE(worst_row_mass, static_cast<double>(c.m) * 0x1p-24 + 1e-6) << "P̃·1 = 1";

    const plan_rows_result no_cost = gpu->plan_rows(without_cost);
    EXPECT_TRUE(no_cost.cost.empty());
    EXPECT_LE(max_abs_diff(no_cost.lse, want.lse), score_tol) << "lse vs float64, no cost";
    EXPECT_LE(max_abs_diff(no_cost.lse, same_mode.lse), float_score_tol) << "lse vs CPU backend, no cost";
    EXPECT_LE(max_abs_diff(no_cost.weighted, want.weighted), weight_tol * v_max) << "weighted vs float64, no cost";
    EXPECT_LE(max_abs_diff(no_cost.weighted, same_mode.weighted), weight_tol_cpu * v_max)
        << "weighted vs CPU backend, no cost";
  }
}

// The fp64 pass (one warp per row: k ≤ 4 summed in registers, wider values through the warp's
// shared weights) against the CPU backend's float64 pass: the same mathematics in another
// summation order, so only a few units of float64 roundoff per score apart.
TEST_P(plan_pass_test, fp64_matches_the_cpu_float64_pass) {
  const plan_case c = GetParam();
  std::mt19937_64 rng(static_cast<std::uint64_t>(13 * c.n + 5 * c.m + 3 * c.d + c.k));
  const gpu_tests::pass_problem made = gpu_tests::make_pass_problem(c, rng);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<double> values(static_cast<std::size_t>(c.m * c.k));
  for (double& v : values) v = normal(rng);
  double v_max = 1;
  for (double v : values) v_max = std::max(v_max, std::abs(v));

  auto exact = make_cpu_backend(made.problem, precision::fp64, 0);
  auto gpu = make_cuda_backend(made.problem, precision::fp64, 0);
  exact->write_potential(slot::g, made.g);
  gpu->write_potential(slot::g, made.g);
  for (const bool want_cost : {true, false}) {
    SCOPED_TRACE(want_cost ? "with cost" : "without cost");
    const plan_rows_request request{side::x, side::y, slot::g, made.eps, c.k > 0 ? values.data() : nullptr, c.k,
                                    want_cost};
    const plan_rows_result want = exact->plan_rows(request);
    const plan_rows_result got = gpu->plan_rows(request);
    // A score carries ~(d + 4) roundings of size u·scale/ε; the sums over m terms add m·u.
    const double score_tol = 64 * static_cast<double>(c.d + 4) * 0x1p-53 * made.scale / made.eps;
    const double weight_tol = score_tol + 4 * static_cast<double>(c.m) * 0x1p-53;
    EXPECT_LE(max_abs_diff(got.lse, want.lse), score_tol) << "lse";
    ASSERT_EQ(got.weighted.size(), want.weighted.size());
    EXPECT_LE(max_abs_diff(got.weighted, want.weighted), weight_tol * v_max) << "weighted";
    ASSERT_EQ(got.cost.size(), want.cost.size());
    EXPECT_LE(max_abs_diff(got.cost, want.cost), weight_tol * made.scale) << "cost";
  }
}

INSTANTIATE_TEST_SUITE_P(widths, plan_pass_test,
                         ::testing::Values(plan_case{1, 1, 1, 1}, plan_case{7, 97, 3, 1}, plan_case{300, 517, 20, 64},
                                           plan_case{300, 517, 20, 65}, plan_case{130, 200, 64, 130},
                                           plan_case{97, 150, 100, 0}, plan_case{129, 65, 512, 3},
                                           plan_case{2000, 3000, 64, 64}, plan_case{260, 300, 128, 65},
                                           plan_case{300, 400, 256, 130}, plan_case{300, 517, 128, 256},
                                           plan_case{70, 90, 8, 2048},
                                           plan_case{60, 130, 256, 2048}, plan_case{300, 5000, 20, 1},
                                           plan_case{1500, 9000, 64, 1}),
                         gpu_tests::shape_name);

}  // namespace
