// solver::potential_vjp on the CUDA backend against the float64 CPU backend. It is built on plan
// passes only (backend::plan_rows), so the CUDA path is the same host CG over the device's passes.
// One problem (odd sizes, d = 17), the nonlinear gauge-invariant loss of the fp64 potentials;
// fp32 (3×TF32 plan passes) and fp64. Skips without a GPU.
#include <gtest/gtest.h>

#include <iostream>
#include <string>
#include <vector>

#include "cpp/potential_vjp_support.hpp"

namespace fs = flashsinkhorn;
using namespace testing_support;

namespace {

class PotentialVjpOnGpu : public ::testing::TestWithParam<fs::precision> {};

TEST_P(PotentialVjpOnGpu, MatchesTheFloat64CpuBackend) {
  if (!fs::cuda_available()) GTEST_SKIP() << "no CUDA device";
  const fs::precision mode = GetParam();
  const reference::cloud x = reference::random_cloud(1031, 17, 41);
  const reference::cloud y = reference::random_cloud(777, 17, 42, 1.0, 0.4);
  const double eps = 2.0;

  fs::options on_cpu = tight_fp64();
  on_cpu.tolerance = 1e-12;
  fs::solver cpu(make_problem(x, y, eps, 1.0), on_cpu);
  const fs::result r = cpu.solve();
  ASSERT_TRUE(r.converged);
  std::vector<double> df, dg;
  nonlinear_loss().cotangent(r.f, r.g, df, dg);
  fs::potential_vjp_options tight;
  tight.tolerance = 1e-12;
  const vjp_gradients expected = potential_gradients(cpu, df, dg, x.dim, tight);
  ASSERT_TRUE(expected.report.converged);

  fs::options on_gpu = fixed_iterations(2000, mode);
  on_gpu.device = fs::device_kind::cuda;
  on_gpu.tolerance = mode == fs::precision::fp64 ? 1e-12 : 1e-6;
  fs::solver gpu(make_problem(x, y, eps, 1.0), on_gpu);
  const fs::result rg = gpu.solve();
  EXPECT_NE(rg.device.find("cuda"), std::string::npos) << rg.device;
  fs::potential_vjp_options settings;
  settings.tolerance = mode == fs::precision::fp64 ? 1e-12 : 1e-5;
  const vjp_gradients got = potential_gradients(gpu, df, dg, x.dim, settings);

  const auto relative = [](const std::vector<double>& a, const std::vector<double>& b) {
    return max_abs_diff(a, b) / max_abs(b);
  };
  std::cout << "[ potential_vjp " << to_string(mode) << " ] solve: " << rg.iterations << " iterations, marginal error "
            << rg.marginal_error << "; CG " << got.report.iterations << " iterations, residual "
            << got.report.relative_residual << "; relative errors X " << relative(got.x, expected.x) << ", Y "
            << relative(got.y, expected.y) << ", a " << relative(got.a, expected.a) << ", b "
            << relative(got.b, expected.b) << "\n";
  EXPECT_TRUE(got.report.converged) << got.report.relative_residual;
  // fp64: same float64 mathematics, other summation order: 1e-8. fp32: the CPU backend's fp32 on
  // this problem is 3.8e-6 (X), 9.4e-6 (Y), 3.5e-5 (a), 1.8e-5 (b) off, dominated by the solve's
  // marginal error (2e-7); the GPU's ex2.approx (2 ulp) and 3×TF32 products are of the same order:
  // bounds 1e-4 (X, Y) and 1e-3 (a, b, which scale like λ ~ ḟ/a; tests/cpp/potential_vjp_usage_test).
  const double points = mode == fs::precision::fp64 ? 1e-8 : 1e-4;
  const double weights = mode == fs::precision::fp64 ? 1e-8 : 1e-3;
  EXPECT_LT(relative(got.x, expected.x), points);
  EXPECT_LT(relative(got.y, expected.y), points);
  EXPECT_LT(relative(got.a, expected.a), weights);
  EXPECT_LT(relative(got.b, expected.b), weights);
}

std::string name_of(const ::testing::TestParamInfo<fs::precision>& info) { return std::string(to_string(info.param)); }

INSTANTIATE_TEST_SUITE_P(Modes, PotentialVjpOnGpu, ::testing::Values(fs::precision::fp32, fs::precision::fp64),
                         name_of);

}  // namespace
