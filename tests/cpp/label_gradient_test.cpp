// ∇X and ∇Y of the converged value with a label cost against central finite differences of the
// value itself, in float64 on the CPU: Euclidean and non-Euclidean W (the pseudo-Euclidean path),
// plain and debiased, λx ≠ 1. The labels are constants: the gradient is the features' part of the
// gradient of the augmented points (solver.cpp, point_gradient).
#include <gtest/gtest.h>

#include <tuple>

#include "label_problems.hpp"

namespace fs = flashsinkhorn;
using namespace testing_support;

namespace {

fs::options converged_options(bool debias) {
  fs::options o = fixed_iterations(5000, fs::precision::fp64);
  o.tolerance = 1e-14;
  o.check_every = 5;
  o.debias = debias;
  return o;
}

class LabelGradientVsFiniteDifferences : public ::testing::TestWithParam<std::tuple<bool, bool>> {};

TEST_P(LabelGradientVsFiniteDifferences, PointsOfXAndY) {
  const auto [euclidean, debias] = GetParam();
  const std::int64_t d = 3, label_count = 5;
  reference::cloud x = reference::random_cloud(23, d, 201, 1.0, 0.5);
  reference::cloud y = reference::random_cloud(17, d, 202, 1.0, -0.5);
  assign_labels(x, label_count, 203);
  assign_labels(y, label_count, 204);
  reference::label_matrix w = euclidean ? euclidean_label_matrix(label_count, 205) : non_euclidean_label_matrix(label_count, 205);
  if (!euclidean) {
    ASSERT_LT(non_psd_certificate(w), 0);
  }
  w.feature_weight = 1.3;
  w.label_weight = 0.7;
  const double eps = 0.5, s = 0.5;
  const fs::options o = converged_options(debias);
  const auto value = [&](const reference::cloud& px, const reference::cloud& py) {
    return fs::solver(make_labelled_problem(px, py, w, eps, s), o).solve().cost;
  };
  fs::solver solver(make_labelled_problem(x, y, w, eps, s), o);
  ASSERT_TRUE(solver.solve().converged);
  std::vector<double> gx(static_cast<std::size_t>(x.count * d)), gy(static_cast<std::size_t>(y.count * d));
  solver.gradient_x(fs::host_matrix(gx.data(), x.count, d));
  solver.gradient_y(fs::host_matrix(gy.data(), y.count, d));

  const std::string where = std::string(euclidean ? "Euclidean W" : "non-Euclidean W") + (debias ? ", debiased" : ", plain");
  const double h = 1e-5;  // central differences: truncation O(h²)·|f'''| ≈ 1e-10, roundoff 1e-16/h ≈ 1e-11
  for (std::int64_t idx : {0L, 4L, 31L, 68L}) {
    reference::cloud plus = x, minus = x;
    plus.points[idx] += h;
    minus.points[idx] -= h;
    const double fd = (value(plus, y) - value(minus, y)) / (2 * h);
    EXPECT_NEAR(gx[idx], fd, 1e-7 + 1e-6 * std::abs(fd)) << where << " dX[" << idx << "]";
  }
  for (std::int64_t idx : {2L, 25L, 50L}) {
    reference::cloud plus = y, minus = y;
    plus.points[idx] += h;
    minus.points[idx] -= h;
    const double fd = (value(x, plus) - value(x, minus)) / (2 * h);
    EXPECT_NEAR(gy[idx], fd, 1e-7 + 1e-6 * std::abs(fd)) << where << " dY[" << idx << "]";
  }
}

std::string case_name(const ::testing::TestParamInfo<std::tuple<bool, bool>>& info) {
  return std::string(std::get<0>(info.param) ? "euclidean" : "non_euclidean") + (std::get<1>(info.param) ? "_debiased" : "_plain");
}

INSTANTIATE_TEST_SUITE_P(Cases, LabelGradientVsFiniteDifferences, ::testing::Combine(::testing::Bool(), ::testing::Bool()),
                         case_name);

// Implicit differentiation with a label cost: with ḟ = a, ġ = b (L = the dual value) potential_vjp
// gives the envelope gradient, the features' columns only (the label coordinates are constants).
TEST(LabelPotentialVjp, DualValueCotangentGivesTheEnvelopeGradient) {
  for (const bool euclidean : {true, false}) {
    const std::int64_t d = 3, label_count = 5;
    reference::cloud x = reference::random_cloud(23, d, 211, 1.0, 0.5);
    reference::cloud y = reference::random_cloud(17, d, 212, 1.0, -0.5);
    assign_labels(x, label_count, 213);
    assign_labels(y, label_count, 214);
    const reference::label_matrix w =
        euclidean ? euclidean_label_matrix(label_count, 215) : non_euclidean_label_matrix(label_count, 215);
    fs::solver solver(make_labelled_problem(x, y, w, 0.5, 0.5), converged_options(false));
    ASSERT_TRUE(solver.solve().converged);
    std::vector<double> gx(static_cast<std::size_t>(x.count * d)), vx(gx.size());
    std::vector<double> gy(static_cast<std::size_t>(y.count * d)), vy(gy.size());
    solver.gradient_x(fs::host_matrix(gx.data(), x.count, d));
    solver.gradient_y(fs::host_matrix(gy.data(), y.count, d));
    std::vector<double> a = x.weights, b = y.weights;
    const auto normalise = [](std::vector<double>& v) {
      double total = 0;
      for (double e : v) total += e;
      for (double& e : v) e /= total;
    };
    normalise(a);
    normalise(b);
    fs::potential_vjp_outputs out;
    out.grad_x = fs::host_matrix(vx.data(), x.count, d);
    out.grad_y = fs::host_matrix(vy.data(), y.count, d);
    // (the sparse_plan preconditioner scans the label-embedded cost, negative coordinates included)
    for (const fs::cg_preconditioner preconditioner : {fs::cg_preconditioner::diagonal, fs::cg_preconditioner::sparse_plan}) {
      fs::potential_vjp_options settings;
      settings.tolerance = 1e-12;
      settings.preconditioner = preconditioner;
      const fs::potential_vjp_report report =
          solver.potential_vjp(fs::host_vector(a.data(), x.count), fs::host_vector(b.data(), y.count), out, settings);
      const char* what = euclidean ? "Euclidean W" : "non-Euclidean W";
      EXPECT_TRUE(report.converged) << what;
      EXPECT_LT(max_abs_diff(vx, gx), 1e-8 * max_abs(gx)) << what;
      EXPECT_LT(max_abs_diff(vy, gy), 1e-8 * max_abs(gy)) << what;
    }
  }
}

}  // namespace
