// Gradients of the converged value against central finite differences of the value itself, in
// float64 on the CPU: ∇X, ∇Y, ∇a, ∇b; squared-Euclidean and cosine; plain, debiased, unbalanced.
#include <gtest/gtest.h>

#include <functional>

#include "test_problems.hpp"

namespace fs = flashsinkhorn;
using namespace testing_support;

namespace {

struct variant {
  const char* name;
  std::function<void(fs::options&)> apply;
};

fs::options converged_options() {
  fs::options o = fixed_iterations(5000, fs::precision::fp64);
  o.tolerance = 1e-14;
  o.check_every = 5;
  return o;
}

double value(reference::cloud x, reference::cloud y, double eps, const fs::options& o) {
  return fs::solver(make_problem(x, y, eps, 1.0), o).solve().cost;
}

class GradientVsFiniteDifferences : public ::testing::TestWithParam<int> {};

TEST_P(GradientVsFiniteDifferences, PointsAndWeights) {
  const std::vector<variant> variants{
      {"plain", [](fs::options&) {}},
      {"debiased", [](fs::options& o) { o.debias = true; }},
      {"unbalanced", [](fs::options& o) { o.reach_x = 1.5; o.reach_y = 1.5; }},
      {"cosine", [](fs::options& o) { o.cost = fs::cost_kind::cosine; }},
      {"symmetric solver", [](fs::options& o) { o.solver = fs::solver_kind::symmetric; }},
  };
  const variant& v = variants[static_cast<std::size_t>(GetParam())];
  const reference::cloud x = reference::random_cloud(23, 3, 101, 1.0, 0.5);
  const reference::cloud y = reference::random_cloud(17, 3, 102, 1.0, -0.5);
  const double eps = 0.4;
  fs::options o = converged_options();
  v.apply(o);
  fs::solver solver(make_problem(x, y, eps, 1.0), o);
  solver.solve();
  std::vector<double> gx(static_cast<std::size_t>(x.count * 3)), gy(static_cast<std::size_t>(y.count * 3));
  solver.gradient_x(fs::host_matrix(gx.data(), x.count, 3));
  solver.gradient_y(fs::host_matrix(gy.data(), y.count, 3));

  const double h = 1e-5;  // central differences: truncation O(h²)·|f'''| ≈ 1e-10, roundoff 1e-16/h ≈ 1e-11
  for (std::int64_t idx : {0L, 4L, 31L, 68L}) {
    reference::cloud plus = x, minus = x;
    plus.points[idx] += h;
    minus.points[idx] -= h;
    const double fd = (value(plus, y, eps, o) - value(minus, y, eps, o)) / (2 * h);
    EXPECT_NEAR(gx[idx], fd, 1e-7 + 1e-6 * std::abs(fd)) << v.name << " dX[" << idx << "]";
  }
  for (std::int64_t idx : {2L, 50L}) {
    reference::cloud plus = y, minus = y;
    plus.points[idx] += h;
    minus.points[idx] -= h;
    const double fd = (value(x, plus, eps, o) - value(x, minus, eps, o)) / (2 * h);
    EXPECT_NEAR(gy[idx], fd, 1e-7 + 1e-6 * std::abs(fd)) << v.name << " dY[" << idx << "]";
  }
  if (o.reach_x) return;  // weight gradients: balanced sides only (documented)
  std::vector<double> ga(static_cast<std::size_t>(x.count)), gb(static_cast<std::size_t>(y.count));
  solver.gradient_a(fs::host_vector(ga.data(), x.count));
  solver.gradient_b(fs::host_vector(gb.data(), y.count));
  for (std::int64_t i : {0L, 11L}) {
    reference::cloud plus = x, minus = x;  // raw weights: the library renormalises them
    plus.weights[i] += h;
    minus.weights[i] -= h;
    const double fd = (value(plus, y, eps, o) - value(minus, y, eps, o)) / (2 * h);
    EXPECT_NEAR(ga[i], fd, 1e-7 + 1e-6 * std::abs(fd)) << v.name << " da[" << i << "]";
  }
  for (std::int64_t j : {3L}) {
    reference::cloud plus = y, minus = y;
    plus.weights[j] += h;
    minus.weights[j] -= h;
    const double fd = (value(x, plus, eps, o) - value(x, minus, eps, o)) / (2 * h);
    EXPECT_NEAR(gb[j], fd, 1e-7 + 1e-6 * std::abs(fd)) << v.name << " db[" << j << "]";
  }
}

INSTANTIATE_TEST_SUITE_P(Variants, GradientVsFiniteDifferences, ::testing::Range(0, 5));

}  // namespace
