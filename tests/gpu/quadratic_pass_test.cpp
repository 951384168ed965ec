// The fused quadratic ("two-GEMM") pass of the CUDA backend (backend.hpp, plan_quadratic_rows)
//   weighted_i = Σ_j softmax_j(S_i·)·(u_i·z_j)·V_j
// with z_j the keys' points (the HVP's pass) or given key directions (the joint HVP's cross terms),
// in every mode against the float64 CPU backend, against the CPU backend of the same mode, and
// against a math fact: u_i·(Σ_j softmax_ij z_j ⊗ V_j) — the generic pass of
// core/plan_quadratic_generic.hpp run on the GPU itself, which contracts an ordinary plan pass of
// the d·k values z_j ⊗ V_j with u_i. Shapes cover one feature chunk and several, a ragged last
// chunk, one value column and several value tiles, and d = 1.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/backend.hpp"
#include "core/plan_quadratic_generic.hpp"
#include "core/prepare.hpp"
#include "cpu/cpu_backend.hpp"
#include "cuda/cuda_backend.hpp"
#include "flashsinkhorn/options.hpp"
#include "gpu/gpu_test_support.hpp"

namespace {

using flashsinkhorn::precision;
using namespace flashsinkhorn::detail;

using quadratic_case = gpu_tests::pass_shape;

class quadratic_pass_test : public gpu_tests::needs_gpu<::testing::TestWithParam<quadratic_case>> {};

// The relative precision of the pass's operands in `mode`: the points and directions are stored in
// the mode's format, the scores and u·q come from the mode's MMA policy, and P∘U is rounded to the
// P·V operand format (tf32 for tf32 and bf16; fp32 is 3×TF32 throughout).
double operand_roundoff(precision mode) {
  switch (mode) {
    case precision::fp64:
      return 0x1p-53;
    case precision::fp32:
      return 0x1p-21;
    case precision::tf32:
      return 0x1p-11;
    case precision::bf16:
      return 0x1p-8;
  }
  return 0;
}

// max over rows i of |got_i − want_i| / bound_i, bound_i = tol · ‖u_i‖ · max_j‖q_j‖ · max|V|: the
// size of the terms of row i, whatever their cancellation.
double worst_scaled_error(const std::vector<double>& got, const std::vector<double>& want,
                          const std::vector<double>& row_scale, std::int64_t k) {
  EXPECT_EQ(got.size(), want.size());
  double worst = 0;
  for (std::size_t idx = 0; idx < std::min(got.size(), want.size()); ++idx) {
    const double diff = std::abs(got[idx] - want[idx]) / row_scale[idx / static_cast<std::size_t>(k)];
    worst = std::isnan(diff) ? INFINITY : std::max(worst, diff);
  }
  return worst;
}

TEST_P(quadratic_pass_test, matches_float64_the_cpu_backend_and_the_generic_pass) {
  const quadratic_case c = GetParam();
  std::mt19937_64 rng(static_cast<std::uint64_t>(13 * c.n + 7 * c.m + 5 * c.d + c.k));
  const gpu_tests::pass_problem made = gpu_tests::make_pass_problem(c, rng);
  const prepared_problem& problem = made.problem;
  const double scale = made.scale, eps = made.eps;
  const std::vector<double>& g = made.g;

  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<double> directions(static_cast<std::size_t>(c.n * c.d));
  for (auto& v : directions) v = normal(rng);
  std::vector<double> values(static_cast<std::size_t>(c.m * c.k));
  for (auto& v : values) v = normal(rng);
  std::vector<double> key_directions(static_cast<std::size_t>(c.m * c.d));  // z_j, as large as the points
  for (auto& v : key_directions) v = normal(rng);
  plan_quadratic_request request;
  request.rows = side::x;
  request.keys = side::y;
  request.key_potential = slot::g;
  request.eps = eps;
  request.directions = directions.data();
  request.values = values.data();
  request.k = c.k;

  double key_norm = 0, v_max = 0;
  const std::vector<double>& key_points = problem.y.points;
  for (const std::vector<double>* z : {&key_points, static_cast<const std::vector<double>*>(&key_directions)}) {
    for (std::int64_t j = 0; j < c.m; ++j) {
      double sq = 0;
      for (std::int64_t l = 0; l < c.d; ++l) sq += (*z)[j * c.d + l] * (*z)[j * c.d + l];
      key_norm = std::max(key_norm, std::sqrt(sq));
    }
  }
  for (double v : values) v_max = std::max(v_max, std::abs(v));
  std::vector<double> row_scale(static_cast<std::size_t>(c.n));
  for (std::int64_t i = 0; i < c.n; ++i) {
    double sq = 0;
    for (std::int64_t l = 0; l < c.d; ++l) sq += directions[i * c.d + l] * directions[i * c.d + l];
    row_scale[i] = std::sqrt(sq) * key_norm * v_max;
  }

  for (const bool given : {false, true}) {
    request.key_directions = given ? key_directions.data() : nullptr;
    auto exact = make_cpu_backend(problem, precision::fp64, 0);
    exact->write_potential(slot::g, g);
    const plan_rows_result want = exact->plan_quadratic_rows(request);

    for (const precision mode : {precision::fp64, precision::fp32, precision::tf32, precision::bf16}) {
      const std::string mode_name = std::string(flashsinkhorn::to_string(mode)) + (given ? " key directions" : "");
      SCOPED_TRACE(mode_name);
      auto gpu = make_cuda_backend(problem, mode, 0);
      auto cpu = make_cpu_backend(problem, mode, 0);
      gpu->write_potential(slot::g, g);
      cpu->write_potential(slot::g, g);
      const plan_rows_result got = gpu->plan_quadratic_rows(request);
      const plan_rows_result same_mode = cpu->plan_quadratic_rows(request);
      const plan_rows_result generic =
          plan_quadratic_rows_by_plan_pass(*gpu, request, problem.y.key_role_points(), c.d, c.n);
      ASSERT_EQ(got.weighted.size(), static_cast<std::size_t>(c.n * c.k));

      // The worst case (each weight moved by exp(2·score error at the largest cost) − 1, as in
      // plan_pass_test.cpp) is 10²–10⁴ times what the kernels reach here, so it would not catch a
      // subtle defect. The bound is instead a few units of the operands' roundoff (u, q, P∘U) plus the
      // fp32 accumulation over m keys, 5–60× the errors measured on the H200 (2026-11-30, 50a113b):
      // fp32 ≤ 7e-7, tf32 ≤ 1.8e-4, bf16 ≤ 1.5e-3 (against the CPU backend; 7.7e-4 against float64).
      const double u = operand_roundoff(mode);
      const double accumulation = mode == precision::fp64 ? 16 * static_cast<double>(c.m) * 0x1p-53
                                                          : 4 * std::sqrt(static_cast<double>(c.m)) * 0x1p-24;
      const double tol = 8 * u + accumulation;
      const double score_tol = 2 * u * scale / eps + 64 * 0x1p-24 * scale / eps;
      const double vs_exact = worst_scaled_error(got.weighted, want.weighted, row_scale, c.k);
      const double vs_cpu = worst_scaled_error(got.weighted, same_mode.weighted, row_scale, c.k);
      const double vs_generic = worst_scaled_error(got.weighted, generic.weighted, row_scale, c.k);
      std::cout << "[ quadratic " << mode_name << " n" << c.n << " m" << c.m << " d" << c.d << " k" << c.k
                << " ] scaled error vs float64 " << vs_exact << ", vs CPU " << vs_cpu << ", vs generic " << vs_generic
                << " (bound " << tol << ")\n";
      EXPECT_LE(vs_exact, tol) << "weighted vs float64";
      EXPECT_LE(vs_cpu, tol) << "weighted vs the CPU backend of the same mode";
      EXPECT_LE(vs_generic, tol) << "weighted vs u_i·(Σ_j softmax_ij q_j ⊗ V_j)";
      double lse_error = 0;
      for (std::int64_t i = 0; i < c.n; ++i) lse_error = std::max(lse_error, std::abs(got.lse[i] - want.lse[i]));
      EXPECT_LE(lse_error, score_tol) << "lse vs float64";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(shapes, quadratic_pass_test,
                         ::testing::Values(quadratic_case{1, 1, 1, 1}, quadratic_case{37, 101, 3, 3},
                                           quadratic_case{300, 517, 20, 1}, quadratic_case{300, 517, 20, 20},
                                           quadratic_case{200, 333, 64, 64}, quadratic_case{130, 150, 100, 65},
                                           quadratic_case{90, 70, 257, 130}, quadratic_case{1500, 2100, 64, 64}),
                         gpu_tests::shape_name);

}  // namespace
