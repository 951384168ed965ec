// The public API on the GPU: flashsinkhorn::solver with device = cuda against the same solver on
// the CPU backend (an oracle with the same operand rounding), for every solver option the core
// loop drives — alternating, symmetric with ε-scaling, debiased, unbalanced, cosine, over-relaxed
// (its blocks replayed as CUDA graphs) — and the quantities after the solve (primal cost,
// barycentric map, ∇X). Skips without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <tuple>
#include <vector>

#include "flashsinkhorn/flashsinkhorn.hpp"
#include "cpp/test_problems.hpp"

namespace fs = flashsinkhorn;
using testing_support::max_abs_diff;

namespace {

fs::problem make_problem(const reference::cloud& x, const reference::cloud& y, double eps) {
  return testing_support::make_problem(x, y, eps, 1.0);
}

struct configuration {
  const char* name;
  std::function<void(fs::options&)> apply;
};

}  // namespace

namespace flashsinkhorn {
// Readable precision modes in gtest/ctest listings.
inline void PrintTo(precision mode, std::ostream* os) {
  *os << to_string(mode);
}
}  // namespace flashsinkhorn

namespace {

class SolverOnGpu : public ::testing::TestWithParam<std::tuple<int, fs::precision>> {};

TEST_P(SolverOnGpu, MatchesTheCpuBackend) {
  if (!fs::cuda_available()) GTEST_SKIP() << "no CUDA device";
  const std::vector<configuration> configurations{
      {"alternating", [](fs::options&) {}},
      {"symmetric+scaling", [](fs::options& o) { o.solver = fs::solver_kind::symmetric; o.scaling = 0.7; }},
      {"debiased", [](fs::options& o) { o.debias = true; }},
      {"unbalanced", [](fs::options& o) { o.reach_x = 2.0; o.reach_y = 1.0; }},
      {"cosine", [](fs::options& o) { o.cost = fs::cost_kind::cosine; }},
      // over-relaxation at the target ε after a schedule: the blend ω on both half-steps, in place
      {"relaxed", [](fs::options& o) { o.scaling = 0.7; o.relaxation = 1.5; }},
      // adaptive ω (relaxation_control.hpp): ω moves with the errors both backends read, so blocks
      // with new blends (graphs captured anew) on CUDA
      {"relaxed_adaptive", [](fs::options& o) { o.scaling = 0.7; o.relaxation = 1.5; o.adaptive_relaxation = true; }},
  };
  const auto [index, mode] = GetParam();
  const configuration& c = configurations[static_cast<std::size_t>(index)];
  const reference::cloud x = reference::random_cloud(1031, 17, 7);
  const reference::cloud y = reference::random_cloud(777, 17, 8, 1.0, 0.4);
  const double eps = 2.0;
  fs::options o;
  o.precision = mode;
  o.max_iterations = 40;
  o.tolerance = 0;
  c.apply(o);
  fs::options on_cpu = o, on_gpu = o;
  on_cpu.device = fs::device_kind::cpu;
  on_gpu.device = fs::device_kind::cuda;
  fs::solver cpu(make_problem(x, y, eps), on_cpu), gpu(make_problem(x, y, eps), on_gpu);
  const fs::result rc = cpu.solve(), rg = gpu.solve();
  EXPECT_NE(rg.device.find("cuda"), std::string::npos) << rg.device;
  // Same rounded operands on both sides; the GPU accumulates in float32 in another order and uses
  // ex2.approx (2 ulp): allow 1e-5 relative for single-precision modes, 1e-10 for fp64.
  const double rel = mode == fs::precision::fp64 ? 1e-10 : 1e-5;
  const double scale = std::max(1.0, std::abs(rc.cost));
  EXPECT_NEAR(rg.cost, rc.cost, rel * scale) << c.name;
  EXPECT_NEAR(rg.primal_cost, rc.primal_cost, rel * scale) << c.name;
  EXPECT_LT(max_abs_diff(rg.f, rc.f), rel * 100 * scale) << c.name;
  EXPECT_EQ(rg.iterations, rc.iterations);
  // KL(P‖a⊗b) takes ⟨softmax_i, g − ḡ⟩ from the plan pass, whose P·V product rounds V to tf32 in
  // the tf32 and bf16 modes (the CPU backend keeps float): 2⁻¹¹·max|g − ḡ|/ε on top of the rest.
  double g_mean = 0, g_spread = 0;
  for (double v : rc.g) g_mean += v / static_cast<double>(rc.g.size());
  for (double v : rc.g) g_spread = std::max(g_spread, std::abs(v - g_mean));
  const bool tensor_rounded = mode == fs::precision::tf32 || mode == fs::precision::bf16;
  const double kl_tol = (tensor_rounded ? 2 * 0x1p-11 * g_spread / eps : 0.0) + rel * 100 * (1 + std::abs(rc.relative_entropy));
  EXPECT_NEAR(rg.relative_entropy, rc.relative_entropy, kl_tol) << c.name;

  std::vector<double> gx_cpu(static_cast<std::size_t>(x.count * x.dim)), gx_gpu(gx_cpu.size());
  cpu.gradient_x(fs::host_matrix(gx_cpu.data(), x.count, x.dim));
  gpu.gradient_x(fs::host_matrix(gx_gpu.data(), x.count, x.dim));
  double gmax = 0;
  for (double v : gx_cpu) gmax = std::max(gmax, std::abs(v));
  EXPECT_LT(max_abs_diff(gx_gpu, gx_cpu), rel * 100 * gmax) << c.name;
}

std::string name_of(const ::testing::TestParamInfo<std::tuple<int, fs::precision>>& info) {
  static const char* configs[] = {"alternating", "symmetric_scaling", "debiased", "unbalanced", "cosine", "relaxed", "relaxed_adaptive"};
  return std::string(configs[std::get<0>(info.param)]) + "_" + std::string(to_string(std::get<1>(info.param)));
}

INSTANTIATE_TEST_SUITE_P(Options, SolverOnGpu,
                         ::testing::Combine(::testing::Range(0, 7),
                                            ::testing::Values(fs::precision::fp32, fs::precision::fp64,
                                                              fs::precision::tf32, fs::precision::bf16)),
                         name_of);

// Iteration blocks through the public API: at the target ε the loop runs blocks of check_every
// iterations through backend::run_block, which the CUDA backend replays as CUDA graphs from a
// block's second sighting on (mechanism and statistics: graph_block_test.cpp). Block lengths 1,
// 3, 5 and 10 with a shorter last block; the symmetric loop with odd blocks (its slot-swap parity
// alternates from block to block) and with debiasing (more swaps); damped steps; and a second
// solve() on the same solver, a warm start whose blocks find the graphs of the first solve.
class BlocksOnGpu : public ::testing::TestWithParam<std::tuple<int, fs::precision>> {};

const std::vector<configuration>& block_configurations() {
  static const std::vector<configuration> configurations{
      {"alternating_check5", [](fs::options& o) { o.check_every = 5; o.max_iterations = 37; }},
      {"alternating_check10", [](fs::options& o) { o.check_every = 10; o.max_iterations = 40; }},
      {"symmetric_check5", [](fs::options& o) { o.solver = fs::solver_kind::symmetric; o.check_every = 5; o.max_iterations = 37; }},
      {"symmetric_scaling_debiased_check3",
       [](fs::options& o) {
         o.solver = fs::solver_kind::symmetric;
         o.scaling = 0.7;
         o.debias = true;
         o.check_every = 3;
         o.max_iterations = 20;
       }},
      {"unbalanced_debiased_check1",
       [](fs::options& o) { o.reach_x = 2.0; o.debias = true; o.check_every = 1; o.max_iterations = 12; }},
  };
  return configurations;
}

TEST_P(BlocksOnGpu, MatchesTheCpuBackendAndWarmStarts) {
  if (!fs::cuda_available()) GTEST_SKIP() << "no CUDA device";
  const auto [index, mode] = GetParam();
  const configuration& c = block_configurations()[static_cast<std::size_t>(index)];
  const reference::cloud x = reference::random_cloud(1031, 17, 17);
  const reference::cloud y = reference::random_cloud(777, 17, 18, 1.0, 0.4);
  fs::options o;
  o.precision = mode;
  o.tolerance = 0;
  c.apply(o);
  fs::options on_cpu = o, on_gpu = o;
  on_cpu.device = fs::device_kind::cpu;
  on_gpu.device = fs::device_kind::cuda;
  fs::solver cpu(make_problem(x, y, 2.0), on_cpu), gpu(make_problem(x, y, 2.0), on_gpu);
  const double rel = mode == fs::precision::fp64 ? 1e-10 : 1e-5;  // as in MatchesTheCpuBackend
  for (const char* solve : {"first solve", "second solve (warm start)"}) {
    const fs::result rc = cpu.solve(), rg = gpu.solve();
    EXPECT_NE(rg.device.find("cuda"), std::string::npos) << rg.device;
    const double scale = std::max(1.0, std::abs(rc.cost));
    EXPECT_EQ(rg.iterations, rc.iterations) << c.name << ", " << solve;
    EXPECT_NEAR(rg.cost, rc.cost, rel * scale) << c.name << ", " << solve;
    // The error read after the last block: only fp64 pins it (elsewhere the potentials' 1e-5 relative
    // differences move it by as much as itself this close to convergence).
    if (mode == fs::precision::fp64) {
      EXPECT_NEAR(rg.marginal_error, rc.marginal_error, 1e-4 * rc.marginal_error + 1e-9) << c.name << ", " << solve;
    }
    EXPECT_LT(max_abs_diff(rg.f, rc.f), rel * 100 * scale) << c.name << ", " << solve;
    EXPECT_LT(max_abs_diff(rg.g, rc.g), rel * 100 * scale) << c.name << ", " << solve;
    if (o.debias) {
      EXPECT_LT(max_abs_diff(rg.f_aa, rc.f_aa), rel * 100 * scale) << c.name << ", " << solve;
    }
  }
}

std::string block_name_of(const ::testing::TestParamInfo<std::tuple<int, fs::precision>>& info) {
  return std::string(block_configurations()[static_cast<std::size_t>(std::get<0>(info.param))].name) + "_" +
         std::string(to_string(std::get<1>(info.param)));
}

INSTANTIATE_TEST_SUITE_P(Blocks, BlocksOnGpu,
                         ::testing::Combine(::testing::Range(0, 5),
                                            ::testing::Values(fs::precision::fp32, fs::precision::fp64,
                                                              fs::precision::tf32, fs::precision::bf16)),
                         block_name_of);

// Warm start from given potentials (problem::initial_f/g), then a run that converges: both
// backends stop at the same check (or one block apart, if the CPU's and the GPU's marginal errors
// fall on either side of the tolerance at one check).
TEST(BlocksOnGpu, WarmStartFromGivenPotentialsThenConverge) {
  if (!fs::cuda_available()) GTEST_SKIP() << "no CUDA device";
  const reference::cloud x = reference::random_cloud(900, 9, 27);
  const reference::cloud y = reference::random_cloud(1100, 9, 28, 1.0, 0.3);
  const double eps = 1.0;
  fs::options first;
  first.device = fs::device_kind::cpu;
  first.max_iterations = 6;
  first.tolerance = 0;
  const fs::result start = fs::solver(make_problem(x, y, eps), first).solve();

  fs::problem p = make_problem(x, y, eps);
  p.initial_f = fs::host_vector(start.f.data(), static_cast<std::int64_t>(start.f.size()));
  p.initial_g = fs::host_vector(start.g.data(), static_cast<std::int64_t>(start.g.size()));
  fs::options o;
  o.precision = fs::precision::fp64;
  o.check_every = 7;
  o.max_iterations = 2000;
  o.tolerance = 1e-7;
  fs::options on_cpu = o, on_gpu = o;
  on_cpu.device = fs::device_kind::cpu;
  on_gpu.device = fs::device_kind::cuda;
  const fs::result rc = fs::solver(p, on_cpu).solve(), rg = fs::solver(p, on_gpu).solve();
  EXPECT_TRUE(rc.converged);
  EXPECT_TRUE(rg.converged);
  EXPECT_LE(rg.marginal_error, o.tolerance);
  EXPECT_LE(std::abs(rg.iterations - rc.iterations), o.check_every);
  EXPECT_EQ(rg.iterations % o.check_every, 0);
  const double scale = std::max(1.0, std::abs(rc.cost));
  EXPECT_NEAR(rg.cost, rc.cost, 1e-5 * scale);  // both within the tolerance of the same fixed point
}

TEST(SolverOnGpu, AutomaticDevicePicksTheGpu) {
  if (!fs::cuda_available()) GTEST_SKIP() << "no CUDA device";
  const reference::cloud x = reference::random_cloud(100, 3, 9);
  fs::problem p = make_problem(x, x, 0.5);
  fs::options o;
  o.max_iterations = 5;
  EXPECT_NE(fs::solver(p, o).solve().device.find("cuda"), std::string::npos);
}

}  // namespace
