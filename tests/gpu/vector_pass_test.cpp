// The one-column plan pass, weighted_i = Σ_j softmax_j(S_i·)·v_j — the matrix-vector product of
// the HVP's conjugate gradients — with a random v (plan_pass_test's k = 1 cases see only v = 1):
// on sm_90a in tf32 and bf16 the Hopper pass (plan_vector_wgmma_kernel.cuh), elsewhere and in fp32
// the mma.sync one (plan_mma_kernel.cuh, kVector), in fp32 on rows of d ≤ 16 given the row
// potential the narrow-row one (plan_vector_narrow_kernel.cuh), each with and without key splits, against the
// float64 CPU backend and the CPU backend of the same mode. Both keep P and v in fp32, so beyond
// the rounded operands' scores only fp32 summation separates them from the CPU backend.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "core/backend.hpp"
#include "core/prepare.hpp"
#include "cpu/cpu_backend.hpp"
#include "cuda/cuda_backend.hpp"
#include "cuda/plan_vector_wgmma_launch.hpp"
#include "cuda/softmin_launch.hpp"
#include "flashsinkhorn/options.hpp"
#include "gpu/gpu_test_support.hpp"

namespace {

using flashsinkhorn::precision;
using namespace flashsinkhorn::detail;

using gpu_tests::max_abs_diff;

double operand_roundoff(precision mode) { return mode == precision::bf16 ? 0x1p-8 : mode == precision::fp32 ? 0x1p-21 : 0x1p-11; }

using vector_case = gpu_tests::pass_shape;  // k unused (one column)

class vector_pass_test : public ::testing::TestWithParam<vector_case> {
 protected:
  void SetUp() override {
    if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  }
};

TEST_P(vector_pass_test, matches_float64_and_the_cpu_backend) {
  const vector_case c = GetParam();
  std::mt19937_64 rng(static_cast<std::uint64_t>(13 * c.n + 5 * c.m + c.d));
  const gpu_tests::pass_problem made = gpu_tests::make_pass_problem(c, rng);
  const prepared_problem& problem = made.problem;
  const double scale = made.scale, eps = made.eps;
  const std::vector<double>& g = made.g;
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<double> v(static_cast<std::size_t>(c.m));
  for (auto& e : v) e = normal(rng);
  double v_max = 0;
  for (double e : v) v_max = std::max(v_max, std::abs(e));
  const plan_rows_request request = plan_pass_request(side::x, slot::g, eps, v.data(), 1);

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

    // As plan_pass_test: the operands' rounding moves each score by ≤ 2u·scale/ε, each weight
    // then by that relative amount twice (its score and the LSE); P and v are fp32 here.
    const double float_score_tol = 64 * 0x1p-24 * scale / eps;
    const double score_tol = 2 * operand_roundoff(mode) * scale / eps + float_score_tol;
    const double weight_tol = std::expm1(2 * score_tol) + 1e-6;
    const double weight_tol_cpu = std::expm1(2 * float_score_tol) + 1e-5;
    EXPECT_LE(max_abs_diff(got.lse, want.lse), score_tol) << "lse vs float64";
    EXPECT_LE(max_abs_diff(got.lse, same_mode.lse), float_score_tol) << "lse vs CPU backend";
    ASSERT_EQ(got.weighted.size(), static_cast<std::size_t>(c.n));
    EXPECT_LE(max_abs_diff(got.weighted, want.weighted), weight_tol * v_max) << "P·v vs float64";
    EXPECT_LE(max_abs_diff(got.weighted, same_mode.weighted), weight_tol_cpu * v_max) << "P·v vs CPU backend";
  }
}

// The LSE-only pass (k = 0, no cost: the solved plan's f̃ = T_f(g)) runs the same kernel without
// values on sm_90a: its LSE against float64 and the CPU backend of the same mode.
TEST_P(vector_pass_test, lse_only_pass_matches_float64_and_the_cpu_backend) {
  const vector_case c = GetParam();
  std::mt19937_64 rng(static_cast<std::uint64_t>(7 * c.n + 3 * c.m + c.d));
  const gpu_tests::pass_problem made = gpu_tests::make_pass_problem(c, rng);
  const prepared_problem& problem = made.problem;
  const double scale = made.scale, eps = made.eps;
  const std::vector<double>& g = made.g;
  const plan_rows_request request = plan_pass_request(side::x, slot::g, eps, nullptr, 0);
  auto exact = make_cpu_backend(problem, precision::fp64, 0);
  exact->write_potential(slot::g, g);
  const plan_rows_result want = exact->plan_rows(request);
  for (const precision mode : {precision::fp32, precision::tf32, precision::bf16}) {
    SCOPED_TRACE(std::string(flashsinkhorn::to_string(mode)));
    auto gpu = make_cuda_backend(problem, mode, 0);
    auto cpu = make_cpu_backend(problem, mode, 0);
    gpu->write_potential(slot::g, g);
    cpu->write_potential(slot::g, g);
    const plan_rows_result got = gpu->plan_rows(request);
    const double float_score_tol = 64 * 0x1p-24 * scale / eps;
    EXPECT_LE(max_abs_diff(got.lse, want.lse), 2 * operand_roundoff(mode) * scale / eps + float_score_tol);
    EXPECT_LE(max_abs_diff(got.lse, cpu->plan_rows(request).lse), float_score_tol);
    EXPECT_TRUE(got.weighted.empty());
  }
}

// The Hessian's products apply the plan in both orientations: x-rows keyed by g and y-rows keyed
// by f. Given the row potential, the fp32 narrow pass (plan_vector_narrow_kernel.cuh) forms each
// entry from both potentials, so the entry P_ij recovered from either orientation,
//   P_ij = a_i·exp(f_i/ε + lse_i)·weighted_i  (v = e_j)  =  b_j·exp(g_j/ε + lse'_j)·weighted'_j  (u = e_i),
// is the same to float64 rounding: both are the one entry 2^t_ij the passes summed (their LSEs
// subtract the row's bias unrounded, plan_lse_offset). Scores from the key side alone, or an LSE
// that subtracts the float bias, differ by ~2⁻²⁴·|β|.
// f is the Sinkhorn half-step of g, so every entry is ≤ a_i (scores ≤ 0). Other modes and wide
// rows run their usual passes; the entries then agree to their scores' rounding.
TEST_P(vector_pass_test, both_orientations_apply_one_matrix) {
  const vector_case c = GetParam();
  std::mt19937_64 rng(static_cast<std::uint64_t>(11 * c.n + 17 * c.m + c.d));
  const gpu_tests::pass_problem made = gpu_tests::make_pass_problem(c, rng);
  const prepared_problem& problem = made.problem;
  const double eps = made.eps;
  auto exact = make_cpu_backend(problem, precision::fp64, 0);
  exact->write_potential(slot::g, made.g);
  std::vector<double> f = exact->plan_rows(plan_pass_request(side::x, slot::g, eps, nullptr, 0)).lse;
  for (double& e : f) e *= -eps;

  auto gpu = make_cuda_backend(problem, precision::fp32, 0);
  gpu->write_potential(slot::f, f);
  gpu->write_potential(slot::g, made.g);
  // Rows and keys of positive weight, spread over the clouds (and so over row blocks and splits).
  auto pick = [](const std::vector<double>& weights) {
    std::vector<std::int64_t> out;
    const auto count = static_cast<std::int64_t>(weights.size());
    for (std::int64_t i = 0; i < count && out.size() < 4; i += std::max<std::int64_t>(1, count / 4))
      for (std::int64_t at = i; at < count; ++at)
        if (weights[static_cast<std::size_t>(at)] > 0) {
          out.push_back(at);
          break;
        }
    return out;
  };
  const std::vector<std::int64_t> rows = pick(problem.x.weights), keys = pick(problem.y.weights);
  // Column j of P from the x-rows pass, row i from the y-rows pass.
  exact->write_potential(slot::f, f);
  auto entries = [&](side rows_side, slot key, slot own, std::int64_t index, const std::vector<double>& weights,
                     const std::vector<double>& potential, std::int64_t keys_count, bool on_gpu = true) {
    std::vector<double> unit(static_cast<std::size_t>(keys_count), 0.0);
    unit[static_cast<std::size_t>(index)] = 1;
    plan_rows_request request = plan_pass_request(rows_side, key, eps, unit.data(), 1);
    request.row_potential = own;
    const plan_rows_result got = on_gpu ? gpu->plan_rows(request) : exact->plan_rows(request);
    std::vector<double> out(weights.size());
    for (std::size_t i = 0; i < out.size(); ++i)
      out[i] = weights[i] * std::exp(potential[i] / eps + got.lse[i]) * got.weighted[i];
    return out;
  };
  const bool narrow = c.d <= 16;
  // Each entry also against float64, as the other tests' P·v (operand and score rounding).
  const double score_tol = 2 * operand_roundoff(precision::fp32) * made.scale / eps + 64 * 0x1p-24 * made.scale / eps;
  double worst = 0, worst_exact = 0;
  for (const std::int64_t j : keys) {
    const std::vector<double> column = entries(side::x, slot::g, slot::f, j, problem.x.weights, f, c.m);
    const std::vector<double> want = entries(side::x, slot::g, slot::f, j, problem.x.weights, f, c.m, false);
    for (std::size_t i = 0; i < column.size(); ++i)
      if (problem.x.weights[i] > 0)
        worst_exact = std::max(worst_exact, std::abs(column[i] - want[i]) / problem.x.weights[i]);
    for (const std::int64_t i : rows) {
      const std::vector<double> row = entries(side::y, slot::f, slot::g, i, problem.y.weights, made.g, c.n);
      const double from_rows = column[static_cast<std::size_t>(i)], from_columns = row[static_cast<std::size_t>(j)];
      ASSERT_GT(from_rows, 0) << "entry (" << i << ", " << j << ")";
      worst = std::max(worst, std::abs(from_rows - from_columns) / from_rows);
    }
  }
  const double tolerance = narrow ? 1e-10 : 64 * 0x1p-21 * made.scale / eps;
  EXPECT_LE(worst, tolerance) << "largest relative difference of one entry between the orientations";
  EXPECT_LE(worst_exact, std::expm1(2 * score_tol)) << "largest difference from float64, relative to a_i";
}

// (1000, 9000): 8 row blocks, the keys split; (20000, 2000): 157 row blocks fill the SMs, no split;
// d = 3 and 20 pad to one 16-word row, d = 64 is the widest resident row, d = 100 takes the mma.sync
// pass. fp32 on d ≤ 16 given the row potential runs the narrow-row pass
// (plan_vector_narrow_kernel.cuh): instances d = 1, 2, 3, 8 (d = 5), 16, its keys split
// (1000 × 9000, 300 × 5000) and not (60000 × 2000).
INSTANTIATE_TEST_SUITE_P(shapes, vector_pass_test,
                         ::testing::Values(vector_case{1, 1, 1, 1}, vector_case{7, 97, 3, 1},
                                           vector_case{1000, 9000, 64, 1}, vector_case{20000, 2000, 64, 1},
                                           vector_case{300, 5000, 20, 1}, vector_case{500, 700, 100, 1},
                                           vector_case{1000, 9000, 2, 1}, vector_case{60000, 2000, 3, 1},
                                           vector_case{300, 5000, 5, 1}, vector_case{2000, 1500, 16, 1}),
                         gpu_tests::shape_name);

// Where the Hopper pass runs: tf32 and bf16 rows of up to 64 words on a device with wgmma.
TEST(vector_pass_choice, hopper_pass_takes_resident_rows_on_sm90) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  int device = 0, max_shared = 0;
  ASSERT_EQ(cudaGetDevice(&device), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetAttribute(&max_shared, cudaDevAttrMaxSharedMemoryPerBlockOptin, device), cudaSuccess);
  EXPECT_EQ(plan_vector_wgmma_stages(precision::fp32, softmin_padded_dim(precision::fp32, 64), max_shared), 0);
  EXPECT_EQ(plan_vector_wgmma_stages(precision::fp64, 64, max_shared), 0);
  if (!wgmma_available(precision::tf32)) GTEST_SKIP() << "no wgmma on this device or build";
  EXPECT_GE(plan_vector_wgmma_stages(precision::tf32, softmin_padded_dim(precision::tf32, 64), max_shared), 2);
  EXPECT_GE(plan_vector_wgmma_stages(precision::bf16, softmin_padded_dim(precision::bf16, 128), max_shared), 2);
  EXPECT_EQ(plan_vector_wgmma_stages(precision::tf32, softmin_padded_dim(precision::tf32, 100), max_shared), 0);
}

}  // namespace
