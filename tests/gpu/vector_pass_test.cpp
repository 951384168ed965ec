// The one-column plan pass, weighted_i = Σ_j softmax_j(S_i·)·v_j — the matrix-vector product of
// the HVP's conjugate gradients — with a random v (plan_pass_test's k = 1 cases see only v = 1):
// on sm_90a in tf32 and bf16 the Hopper pass (plan_vector_wgmma_kernel.cuh), elsewhere and in fp32
// the mma.sync one (plan_mma_kernel.cuh, kVector), in fp32 on rows of d ≤ 16 the float64
// narrow-row one (plan_vector_narrow_kernel.cuh), each with and without key splits, against the
// float64 CPU backend and the CPU backend of the same mode. The tensor-core passes keep P and v in
// fp32, so beyond the rounded operands' scores only fp32 summation separates them from the CPU
// backend; the narrow one is float64 throughout.
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
#include "cuda/kernel_variant.hpp"
#include "cuda/tile_config.hpp"
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

// A value column v (m,) and a two-column V (m, 2) whose first column is v: the k = 2 pass's first
// column must be the one-column pass.
struct value_columns {
  std::vector<double> v, two;
  double v_max = 0;  // max |v_j|
};
value_columns make_value_columns(std::int64_t m, std::mt19937_64& rng) {
  std::normal_distribution<double> normal(0.0, 1.0);
  value_columns out;
  out.v.resize(static_cast<std::size_t>(m));
  out.two.resize(static_cast<std::size_t>(2 * m));
  for (std::size_t j = 0; j < out.v.size(); ++j) {
    out.v[j] = out.two[2 * j] = normal(rng);
    out.two[2 * j + 1] = normal(rng);
    out.v_max = std::max(out.v_max, std::abs(out.v[j]));
  }
  return out;
}

// Column 0 of a (rows, 2) result.
std::vector<double> first_of_two(const std::vector<double>& weighted) {
  std::vector<double> first(weighted.size() / 2);
  for (std::size_t i = 0; i < first.size(); ++i) first[i] = weighted[2 * i];
  return first;
}

class vector_pass_test : public gpu_tests::needs_gpu<::testing::TestWithParam<vector_case>> {};

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

// fp32 on rows of d ≤ 16 runs its one-column and LSE-only passes in float64 on the narrow-row
// kernel (plan_vector_narrow_kernel.cuh) and its wider passes on the float64 SIMT kernel
// (plan_rows_kernel.cuh): the Hessian's CG mixes the two, so they must form one matrix. A k = 2
// pass (SIMT) whose first column is v gives the LSE and P·v the k = 1 and k = 0 passes (narrow)
// must reproduce to float64 rounding — against fp32 rounding (2⁻²⁴ of scores of size scale/ε)
// that any fp32 arithmetic would show. Under FLASHSINKHORN_FP32_PASS_EXP=ex2 both take their weights'
// e^x by math::exp_by_exp2 from scores that agree to float64 rounding: a weight then differs only
// where rounding f to single precision lands on either side of a float (≤ 2⁻²³ of it), so the
// bound is twice that, relative, instead of float64 rounding.
TEST_P(vector_pass_test, fp32_narrow_pass_is_the_float64_simt_pass) {
  const vector_case c = GetParam();
  if (c.d > 16) GTEST_SKIP() << "rows wider than 16 run the tensor-core passes in fp32";
  if (!fp32_fma_dots_for(tile::kSimtFp32MaxDim)) GTEST_SKIP() << "FLASHSINKHORN_FP32_DOTS=3xtf32: fp32 passes on the tensor cores";
  std::mt19937_64 rng(static_cast<std::uint64_t>(5 * c.n + 11 * c.m + c.d));
  const gpu_tests::pass_problem made = gpu_tests::make_pass_problem(c, rng);
  const value_columns values = make_value_columns(c.m, rng);
  auto gpu = make_cuda_backend(made.problem, precision::fp32, 0);
  gpu->write_potential(slot::g, made.g);
  const plan_rows_result simt = gpu->plan_rows(plan_pass_request(side::x, slot::g, made.eps, values.two.data(), 2));
  const plan_rows_result narrow = gpu->plan_rows(plan_pass_request(side::x, slot::g, made.eps, values.v.data(), 1));
  const plan_rows_result lse_only = gpu->plan_rows(plan_pass_request(side::x, slot::g, made.eps, nullptr, 0));
  const double tol = 1e-12 * (1 + made.scale / made.eps) + (fp32_pass_exp_by_ex2() ? 0x1p-22 : 0.0);
  EXPECT_LE(max_abs_diff(narrow.lse, simt.lse), tol) << "LSE, k = 1";
  EXPECT_LE(max_abs_diff(lse_only.lse, simt.lse), tol) << "LSE, k = 0";
  EXPECT_LE(max_abs_diff(narrow.weighted, first_of_two(simt.weighted)), tol * values.v_max) << "P·v";
}

// fp64 runs every pass on the SIMT kernel (plan_rows_kernel.cuh); its keys split over CTAs when
// there are few row blocks (1,000 rows: 16 on 132 SMs) and plan_rows_combine_kernel merges the
// splits' states. The one-column pass (with the cost) and the LSE-only pass against the float64
// CPU backend, and against a k = 2 pass (its first column v), the kernel's other instance: weights
// through shared memory, values staged by tiles, each column's split sums merged apart. All to
// float64 rounding of scores of size scale/ε.
TEST_P(vector_pass_test, fp64_passes_with_split_keys_match_the_cpu_backend) {
  const vector_case c = GetParam();
  std::mt19937_64 rng(static_cast<std::uint64_t>(3 * c.n + 17 * c.m + c.d));
  const gpu_tests::pass_problem made = gpu_tests::make_pass_problem(c, rng);
  const value_columns values = make_value_columns(c.m, rng);
  auto gpu = make_cuda_backend(made.problem, precision::fp64, 0);
  auto cpu = make_cpu_backend(made.problem, precision::fp64, 0);
  gpu->write_potential(slot::g, made.g);
  cpu->write_potential(slot::g, made.g);
  const plan_rows_request with_cost = plan_pass_request(side::x, slot::g, made.eps, values.v.data(), 1, true);
  const plan_rows_result one = gpu->plan_rows(with_cost);
  const plan_rows_result want = cpu->plan_rows(with_cost);
  const plan_rows_result lse_only = gpu->plan_rows(plan_pass_request(side::x, slot::g, made.eps, nullptr, 0));
  const plan_rows_result two = gpu->plan_rows(plan_pass_request(side::x, slot::g, made.eps, values.two.data(), 2));
  const double tol = 1e-12 * (1 + made.scale / made.eps);
  EXPECT_LE(max_abs_diff(one.lse, want.lse), tol) << "LSE, k = 1";
  EXPECT_LE(max_abs_diff(lse_only.lse, want.lse), tol) << "LSE, k = 0";
  EXPECT_LE(max_abs_diff(one.weighted, want.weighted), tol * values.v_max) << "P·v";
  EXPECT_LE(max_abs_diff(one.cost, want.cost), tol * (1 + made.scale)) << "Σ P·C";
  EXPECT_LE(max_abs_diff(one.lse, two.lse), tol) << "LSE against k = 2";
  EXPECT_LE(max_abs_diff(one.weighted, first_of_two(two.weighted)), tol * values.v_max) << "P·v against k = 2";
}

// (1000, 9000): 8 row blocks, the keys split; (20000, 2000): 157 row blocks fill the SMs, no split;
// d = 3 and 20 pad to one 16-word row, d = 64 is the widest resident row, d = 100 takes the mma.sync
// pass. fp32 on d ≤ 16 runs the float64 narrow-row pass (plan_vector_narrow_kernel.cuh):
// instances d = 1, 2, 3, 8 (d = 5), 16, its keys split (1000 × 9000, 300 × 5000) and not
// (60000 × 2000).
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
