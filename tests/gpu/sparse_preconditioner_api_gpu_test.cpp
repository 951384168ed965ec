// The sparse_plan preconditioner through the public API on the CUDA backend
// (solver::potential_vjp with potential_vjp_options::preconditioner), where its device pieces meet
// the cases the benchmark problem never shows: the label cost (negative embedding coordinates in
// the top-entries scores) and fewer keys than kept entries (m = 5 < 8: missing entries). On the
// same solved problem the product must be the diagonal preconditioner's, to the CG tolerance; the
// dual-value cotangent (a, b) must give the envelope gradient (label_gradient_test.cpp's fact).
#include <gtest/gtest.h>

#include <cstdint>
#include <iostream>
#include <string>
#include <vector>

#include "cpp/hvp_support.hpp"
#include "cpp/label_problems.hpp"
#include "flashsinkhorn/flashsinkhorn.hpp"

namespace fs = flashsinkhorn;
using namespace testing_support;

namespace {

struct vjp_case {
  const char* name;
  std::int64_t n, m;
  bool labels;
  fs::precision mode;
};

class SparsePreconditionerOnGpu : public ::testing::TestWithParam<vjp_case> {};

TEST_P(SparsePreconditionerOnGpu, GivesTheDiagonalsProductAndTheEnvelopeGradient) {
  if (!fs::cuda_available()) GTEST_SKIP() << "no CUDA device";
  const vjp_case c = GetParam();
  const std::int64_t d = 3, label_count = 5;
  reference::cloud x = reference::random_cloud(c.n, d, 311, 1.0, 0.5);
  reference::cloud y = reference::random_cloud(c.m, d, 312, 1.0, -0.5);
  fs::problem p = make_problem(x, y, 0.5, 0.5);
  if (c.labels) {
    assign_labels(x, label_count, 313);
    assign_labels(y, label_count, 314);
    p = make_labelled_problem(x, y, non_euclidean_label_matrix(label_count, 315), 0.5, 0.5);
  }
  const bool fp64 = c.mode == fs::precision::fp64;
  fs::options o = fixed_iterations(5000, c.mode);
  o.tolerance = fp64 ? 1e-13 : 1e-6;
  o.check_every = 5;
  o.device = fs::device_kind::cuda;
  fs::solver solver(p, o);
  ASSERT_TRUE(solver.solve().converged);
  std::vector<double> gx(static_cast<std::size_t>(c.n * d));
  solver.gradient_x(fs::host_matrix(gx.data(), c.n, d));

  std::vector<double> a = x.weights, b = y.weights;
  for (std::vector<double>* w : {&a, &b}) {
    double total = 0;
    for (double e : *w) total += e;
    for (double& e : *w) e /= total;
  }
  std::vector<std::vector<double>> products;
  std::vector<int> iterations;
  for (const fs::cg_preconditioner preconditioner :
       {fs::cg_preconditioner::diagonal, fs::cg_preconditioner::sparse_plan}) {
    std::vector<double> vx(gx.size());
    fs::potential_vjp_outputs out;
    out.grad_x = fs::host_matrix(vx.data(), c.n, d);
    fs::potential_vjp_options settings;
    settings.tolerance = fp64 ? 1e-12 : 1e-6;
    settings.preconditioner = preconditioner;
    const fs::potential_vjp_report report =
        solver.potential_vjp(fs::host_vector(a.data(), c.n), fs::host_vector(b.data(), c.m), out, settings);
    EXPECT_TRUE(report.converged) << c.name << " " << report.relative_residual;
    EXPECT_LT(max_abs_diff(vx, gx), (fp64 ? 1e-8 : 1e-4) * max_abs(gx)) << c.name;
    products.push_back(vx);
    iterations.push_back(report.iterations);
  }
  EXPECT_LT(max_abs_diff(products[1], products[0]), (fp64 ? 1e-8 : 1e-4) * max_abs(products[0])) << c.name;
  EXPECT_LE(iterations[1], iterations[0]) << c.name;
}

std::string name_of(const ::testing::TestParamInfo<vjp_case>& info) { return info.param.name; }

INSTANTIATE_TEST_SUITE_P(Cases, SparsePreconditionerOnGpu,
                         ::testing::Values(vjp_case{"labels_fp64", 23, 17, true, fs::precision::fp64},
                                           vjp_case{"labels_fp32", 23, 17, true, fs::precision::fp32},
                                           vjp_case{"five_keys_fp64", 40, 5, false, fs::precision::fp64},
                                           vjp_case{"five_keys_fp32", 40, 5, false, fs::precision::fp32}),
                         name_of);

// A plan close to a matching (d = 64, ε = 0.1, 10 iterations): in fp32 and tf32 the sparse CG on the
// device meets the Schur products' rounding in the near-null directions and breaks down (the suite's
// session-10 rows: residuals 0.04–0.76 for 2e-5), and its diagonal fallback stalls in tf32; the
// product is then redone, whole, on a float64 CUDA backend (core/float64_replica.hpp) and must reach
// the tolerance, within the single-precision plan's distance of the float64 CPU backend's product
// (the CPU test NearMatchingFp32PlanIsRedoneInFloat64 measures 1.3e-2 in fp32).
TEST(SparsePreconditionerOnGpuSinglePrecision, NearMatchingPlanReachesTheTolerance) {
  if (!fs::cuda_available()) GTEST_SKIP() << "no CUDA device";
  const reference::cloud x = reference::random_cloud(2000, 64, 91);
  const reference::cloud y = reference::random_cloud(2000, 64, 92);
  const std::vector<double> a = random_direction(x.count * x.dim, 93);
  fs::hvp_options settings;
  settings.tolerance = 1e-4;
  settings.max_iterations = 600;
  settings.preconditioner = fs::cg_preconditioner::sparse_plan;
  fs::options cpu = fixed_iterations(10, fs::precision::fp64);
  cpu.device = fs::device_kind::cpu;
  fs::solver exact(make_problem(x, y, 0.1, 1.0), cpu);
  exact.solve();
  const std::vector<double> want = library_hvp(exact, x, true, a, settings);
  for (const fs::precision mode : {fs::precision::fp32, fs::precision::tf32}) {
    fs::options o = fixed_iterations(10, mode);
    o.device = fs::device_kind::cuda;
    fs::solver single(make_problem(x, y, 0.1, 1.0), o);
    single.solve();
    fs::hvp_report report;
    const std::vector<double> got = library_hvp(single, x, true, a, settings, &report);
    std::cout << "[ " << (mode == fs::precision::fp32 ? "fp32" : "tf32") << ", 2000 x 64 ] CG iterations "
              << report.cg_iterations << ", residual " << report.relative_residual << ", redone in float64 "
              << report.redone_in_float64 << "; against the float64 CPU product " << relative_max_error(got, want)
              << "\n";
    EXPECT_TRUE(report.converged) << report.relative_residual;
    EXPECT_LT(relative_max_error(got, want), 1e-1);
  }
}

}  // namespace
