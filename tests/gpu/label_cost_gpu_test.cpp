// The label-augmented cost on the GPU: flashsinkhorn::solver with device = cuda against (1) the CPU
// backend in the same precision mode (the same rounded operands: the tolerances of solver_gpu_test's
// MatchesTheCpuBackend) and (2) the CPU backend in float64 (the tolerances the CPU modes meet against
// the float64 dense reference, test_problems.hpp). A Euclidean W (label coordinates only) and a
// non-Euclidean W (negative-signature coordinates: the keys' copy η⊙q is uploaded and every kernel
// variant — fp64 FMA, mma.sync, wgmma — runs the signed form); alternating, debiased (a cloud as rows
// and keys at once), and GeomLoss's symmetric loop with ε-scaling. Skips without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <tuple>
#include <vector>

#include "cpp/label_problems.hpp"
#include "flashsinkhorn/flashsinkhorn.hpp"

namespace fs = flashsinkhorn;
using namespace testing_support;

namespace {

struct configuration {
  const char* name;
  std::function<void(fs::options&)> apply;
};

const std::vector<configuration>& configurations() {
  static const std::vector<configuration> list{
      {"alternating", [](fs::options&) {}},
      {"debiased", [](fs::options& o) { o.debias = true; }},
      {"symmetric_scaling_debiased",
       [](fs::options& o) {
         o.solver = fs::solver_kind::symmetric;
         o.scaling = 0.7;
         o.debias = true;
       }},
  };
  return list;
}

using case_parameters = std::tuple<bool, int, fs::precision>;  // (Euclidean W, configuration, mode)

class LabelCostOnGpu : public ::testing::TestWithParam<case_parameters> {};

TEST_P(LabelCostOnGpu, MatchesTheCpuBackendAndFloat64) {
  if (!fs::cuda_available()) GTEST_SKIP() << "no CUDA device";
  const auto [euclidean, index, mode] = GetParam();
  const configuration& c = configurations()[static_cast<std::size_t>(index)];
  // OTDD's shape at small scale: 20 labels, s = ½, λx = λy = 1.
  reference::cloud x = reference::random_cloud(1031, 17, 7);
  reference::cloud y = reference::random_cloud(777, 17, 8, 1.0, 0.4);
  assign_labels(x, 20, 9);
  assign_labels(y, 20, 10);
  const reference::label_matrix w = euclidean ? euclidean_label_matrix(20, 11) : non_euclidean_label_matrix(20, 11);
  if (!euclidean) {
    ASSERT_LT(non_psd_certificate(w), 0);
  }
  const fs::problem p = make_labelled_problem(x, y, w, 2.0, 0.5);
  fs::options o;
  o.precision = mode;
  o.max_iterations = 40;
  o.tolerance = 0;
  c.apply(o);
  fs::options on_cpu = o, on_gpu = o, on_cpu_fp64 = o;
  on_cpu.device = on_cpu_fp64.device = fs::device_kind::cpu;
  on_gpu.device = fs::device_kind::cuda;
  on_cpu_fp64.precision = fs::precision::fp64;
  fs::solver cpu(p, on_cpu), gpu(p, on_gpu);
  const fs::result rc = cpu.solve(), rg = gpu.solve();
  const fs::result r64 = fs::solver(p, on_cpu_fp64).solve();
  const std::string where = std::string(euclidean ? "Euclidean W, " : "non-Euclidean W, ") + c.name;
  EXPECT_NE(rg.device.find("cuda"), std::string::npos) << rg.device;
  EXPECT_EQ(rg.iterations, rc.iterations);

  // (1) Same rounded operands on both backends: 1e-5 relative (float32 accumulation order, ex2.approx),
  // 1e-10 in fp64, as in solver_gpu_test.cpp.
  const double rel = mode == fs::precision::fp64 ? 1e-10 : 1e-5;
  const double scale = std::max(1.0, std::abs(rc.cost));
  EXPECT_NEAR(rg.cost, rc.cost, rel * scale) << where;
  EXPECT_NEAR(rg.primal_cost, rc.primal_cost, rel * std::max(1.0, std::abs(rc.primal_cost))) << where;
  EXPECT_LT(max_abs_diff(rg.f, rc.f), rel * 100 * scale) << where;
  EXPECT_LT(max_abs_diff(rg.g, rc.g), rel * 100 * scale) << where;
  if (o.debias) {
    EXPECT_LT(max_abs_diff(rg.f_aa, rc.f_aa), rel * 100 * scale) << where;
    EXPECT_LT(max_abs_diff(rg.g_bb, rc.g_bb), rel * 100 * scale) << where;
  }
  std::vector<double> gx_cpu(static_cast<std::size_t>(x.count * x.dim)), gx_gpu(gx_cpu.size());
  cpu.gradient_x(fs::host_matrix(gx_cpu.data(), x.count, x.dim));
  gpu.gradient_x(fs::host_matrix(gx_gpu.data(), x.count, x.dim));
  EXPECT_LT(max_abs_diff(gx_gpu, gx_cpu), rel * 100 * std::max(1e-12, max_abs(gx_cpu))) << where << " ∇X";

  // (2) Against float64: the operand rounding of the mode (relative_tolerance) — measured on the CPU
  // for this problem at ≤ 1/10 of it in every mode (bf16 potentials: 1/14); fp64 as in (1).
  const double rel64 = mode == fs::precision::fp64 ? 1e-10 : relative_tolerance(mode);
  const double scale64 = std::max(1.0, std::abs(r64.cost));
  EXPECT_NEAR(rg.cost, r64.cost, rel64 * scale64) << where << " vs float64";
  EXPECT_NEAR(rg.primal_cost, r64.primal_cost, rel64 * std::max(1.0, std::abs(r64.primal_cost))) << where << " vs float64";
  const double potential_scale = std::max({1.0, max_abs(r64.f), max_abs(r64.g)});
  EXPECT_LT(max_abs_diff(rg.f, r64.f), rel64 * potential_scale) << where << " vs float64";
}

std::string case_name(const ::testing::TestParamInfo<case_parameters>& info) {
  std::string name(std::get<0>(info.param) ? "euclidean_" : "non_euclidean_");
  name.append(configurations()[static_cast<std::size_t>(std::get<1>(info.param))].name).append("_");
  return name.append(fs::to_string(std::get<2>(info.param)));
}

INSTANTIATE_TEST_SUITE_P(Cases, LabelCostOnGpu,
                         ::testing::Combine(::testing::Bool(), ::testing::Range(0, 3),
                                            ::testing::Values(fs::precision::fp32, fs::precision::fp64,
                                                              fs::precision::tf32, fs::precision::bf16)),
                         case_name);

}  // namespace
