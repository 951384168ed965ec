// solver::potential_vjp against three oracles, float64 on the CPU:
//   central finite differences of L(f(X, Y, a, b), g(…)) through full solves (linear and nonlinear
//   gauge-invariant losses; plain, cosine, cost_scale ½, symmetric solver, debiased);
//   the envelope theorem (L = ⟨a,f⟩ + ⟨b,g⟩ gives gradient_x / gradient_y);
//   a dense adjoint solve with the plan built densely from the returned g;
// and the documented gauge rule for cotangents with Σḟ ≠ Σġ.
#include <gtest/gtest.h>

#include <functional>
#include <iostream>

#include "potential_vjp_support.hpp"
#include "reference/dense_linear_solve.hpp"

namespace fs = flashsinkhorn;
using namespace testing_support;

namespace {

struct setup {
  const char* name;
  double cost_scale;
  std::function<void(fs::options&)> apply;
};

const std::vector<setup>& setups() {
  static const std::vector<setup> all{
      {"plain", 1.0, [](fs::options&) {}},
      {"cosine", 1.0, [](fs::options& o) { o.cost = fs::cost_kind::cosine; }},
      {"cost_scale 0.5", 0.5, [](fs::options&) {}},
      {"symmetric solver", 1.0, [](fs::options& o) { o.solver = fs::solver_kind::symmetric; }},
      {"debiased", 1.0, [](fs::options& o) { o.debias = true; }},
  };
  return all;
}

struct fixture_problem {
  reference::cloud x = reference::random_cloud(23, 3, 101, 1.0, 0.5);
  reference::cloud y = reference::random_cloud(17, 3, 102, 1.0, -0.5);
  double eps = 0.4;
};

// L at the converged potentials of the problem (x, y) — one full solve.
double loss_at(const potential_loss& loss, const reference::cloud& x, const reference::cloud& y, double eps,
               const setup& s) {
  fs::options o = tight_fp64();
  s.apply(o);
  const fs::result r = fs::solver(make_problem(x, y, eps, s.cost_scale), o).solve();
  return loss.value(r.f, r.g);
}

// Central difference of L along one entry of `which` (points or weights of x or y).
double central_difference(const potential_loss& loss, const fixture_problem& p, const setup& s, bool on_x,
                          bool weights, std::int64_t index) {
  const double h = 1e-5;  // truncation O(h²) ≈ 1e-10; solve noise ~1e-13/h = 1e-8 (relative)
  reference::cloud plus = on_x ? p.x : p.y, minus = plus;
  std::vector<double>& up = weights ? plus.weights : plus.points;
  std::vector<double>& down = weights ? minus.weights : minus.points;
  up[index] += h;
  down[index] -= h;
  const double hi = on_x ? loss_at(loss, plus, p.y, p.eps, s) : loss_at(loss, p.x, plus, p.eps, s);
  const double lo = on_x ? loss_at(loss, minus, p.y, p.eps, s) : loss_at(loss, p.x, minus, p.eps, s);
  return (hi - lo) / (2 * h);
}

class PotentialVjpVsFiniteDifferences : public ::testing::TestWithParam<std::tuple<int, int>> {};

TEST_P(PotentialVjpVsFiniteDifferences, PointsAndWeights) {
  const auto [setup_index, loss_index] = GetParam();
  const setup& s = setups()[static_cast<std::size_t>(setup_index)];
  const fixture_problem p;
  const potential_loss loss = loss_index == 0 ? linear_loss(p.x.count, p.y.count, 7, true) : nonlinear_loss();
  fs::options o = tight_fp64();
  s.apply(o);
  fs::solver solver(make_problem(p.x, p.y, p.eps, s.cost_scale), o);
  const fs::result r = solver.solve();
  ASSERT_TRUE(r.converged) << s.name;
  std::vector<double> df, dg;
  loss.cotangent(r.f, r.g, df, dg);
  fs::potential_vjp_options settings;
  settings.tolerance = 1e-12;
  const vjp_gradients grad = potential_gradients(solver, df, dg, 3, settings);
  EXPECT_TRUE(grad.report.converged) << grad.report.relative_residual;
  EXPECT_NEAR(grad.report.gauge_defect, 0.0, 1e-12);

  const std::string where = std::string(s.name) + ", " + loss.name;
  // 1e-6 relative to the entry, with a floor of 1e-6 × the largest entry of that gradient for
  // entries near 0 (the finite difference's absolute error is ~1e-8·|L|/h-scaled).
  double worst = 0;  // largest |analytic − fd| / |fd|, printed
  const auto check = [&](const std::vector<double>& g, bool on_x, bool weights, std::int64_t index, const char* what) {
    const double fd = central_difference(loss, p, s, on_x, weights, index);
    EXPECT_NEAR(g[index], fd, 1e-6 * (std::abs(fd) + max_abs(g))) << where << ": " << what << "[" << index << "]";
    worst = std::max(worst, std::abs(g[index] - fd) / std::abs(fd));
  };
  for (std::int64_t idx : {0L, 4L, 31L, 68L}) check(grad.x, true, false, idx, "dL/dX");
  for (std::int64_t idx : {2L, 25L, 50L}) check(grad.y, false, false, idx, "dL/dY");
  for (std::int64_t idx : {0L, 11L}) check(grad.a, true, true, idx, "dL/da");
  for (std::int64_t idx : {3L, 16L}) check(grad.b, false, true, idx, "dL/db");
  std::cout << "[ vs finite differences ] " << where << ": CG " << grad.report.iterations
            << " iterations, worst relative difference " << worst << "\n";
}

INSTANTIATE_TEST_SUITE_P(SetupsAndLosses, PotentialVjpVsFiniteDifferences,
                         ::testing::Combine(::testing::Range(0, 5), ::testing::Range(0, 2)));

// L = ⟨a, f⟩ + ⟨b, g⟩ (the dual value, a and b held fixed): ∂L/∂X is the envelope-theorem gradient.
TEST(PotentialVjp, DualValueCotangentGivesTheEnvelopeGradient) {
  for (const setup& s : setups()) {
    if (std::string(s.name) == "debiased") continue;  // gradient_x is then that of S_ε
    const fixture_problem p;
    fs::options o = tight_fp64();
    s.apply(o);
    fs::solver solver(make_problem(p.x, p.y, p.eps, s.cost_scale), o);
    solver.solve();
    fs::potential_vjp_options settings;
    settings.tolerance = 1e-12;
    const vjp_gradients grad = potential_gradients(solver, p.x.weights, p.y.weights, 3, settings);
    std::vector<double> gx(grad.x.size()), gy(grad.y.size());
    solver.gradient_x(fs::host_matrix(gx.data(), p.x.count, 3));
    solver.gradient_y(fs::host_matrix(gy.data(), p.y.count, 3));
    EXPECT_LT(max_abs_diff(grad.x, gx), 1e-8 * max_abs(gx)) << s.name;
    EXPECT_LT(max_abs_diff(grad.y, gy), 1e-8 * max_abs(gy)) << s.name;
  }
}

// The adjoint as a dense float64 computation: the library's plan P (rows renormalised from the
// returned g), c = Pᵀ1, H = [[diag a, P], [Pᵀ, diag c]], (H + vvᵀ)λ = r with v = (1, −1) (the
// minimum-norm solution for r ⊥ v), dL/dC = P∘(λ_f ⊕ λ_g). After only 12 iterations on purpose:
// the operator is the plan of these potentials, converged or not.
TEST(PotentialVjp, MatchesADenseAdjointSolve) {
  const fixture_problem p;
  const std::int64_t n = p.x.count, m = p.y.count, d = 3;
  fs::options o = fixed_iterations(12, fs::precision::fp64);
  fs::solver solver(make_problem(p.x, p.y, p.eps, 1.0), o);
  const fs::result r = solver.solve();
  const potential_loss loss = linear_loss(n, m, 11, true);
  std::vector<double> df, dg;
  loss.cotangent(r.f, r.g, df, dg);
  fs::potential_vjp_options settings;
  settings.tolerance = 1e-13;
  const vjp_gradients grad = potential_gradients(solver, df, dg, d, settings);

  const std::vector<double> plan = reference::row_plan(p.x, p.y, r.g, p.eps, 1.0);
  const std::int64_t size = n + m;
  std::vector<double> h(static_cast<std::size_t>(size * size), 0.0), rhs(static_cast<std::size_t>(size));
  for (std::int64_t i = 0; i < n; ++i) {
    h[i * size + i] = p.x.weights[i];
    for (std::int64_t j = 0; j < m; ++j) {
      h[i * size + n + j] = h[(n + j) * size + i] = plan[i * m + j];
      h[(n + j) * size + n + j] += plan[i * m + j];
    }
  }
  for (std::int64_t a = 0; a < size; ++a) {
    for (std::int64_t b = 0; b < size; ++b) h[a * size + b] += (a < n ? 1.0 : -1.0) * (b < n ? 1.0 : -1.0);
    rhs[a] = a < n ? df[a] : dg[a - n];
  }
  const std::vector<double> lambda = reference::dense_solve(h, rhs);

  std::vector<double> gx(static_cast<std::size_t>(n * d), 0.0), gy(static_cast<std::size_t>(m * d), 0.0);
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t j = 0; j < m; ++j) {
      const double dl_dc = plan[i * m + j] * (lambda[i] + lambda[n + j]);
      for (std::int64_t c = 0; c < d; ++c) {
        const double diff = 2 * (p.x.points[i * d + c] - p.y.points[j * d + c]);
        gx[i * d + c] += dl_dc * diff;
        gy[j * d + c] -= dl_dc * diff;
      }
    }
  }
  EXPECT_TRUE(grad.report.converged) << grad.report.relative_residual;
  EXPECT_LT(max_abs_diff(grad.x, gx), 1e-10 * max_abs(gx));
  EXPECT_LT(max_abs_diff(grad.y, gy), 1e-10 * max_abs(gy));
}

// Σḟ ≠ Σġ: the documented rule — the cotangent's component along (1, −1) is removed, which is the
// derivative of L∘Π with Π(f, g) = (f − t, g + t), t = (Σf − Σg)/(n + m).
TEST(PotentialVjp, NonInvariantCotangentIsProjectedOntoTheGauge) {
  const fixture_problem p;
  const std::int64_t n = p.x.count, m = p.y.count;
  const potential_loss loss = linear_loss(n, m, 13, false);
  fs::solver solver(make_problem(p.x, p.y, p.eps, 1.0), tight_fp64());
  const fs::result r = solver.solve();
  std::vector<double> df, dg;
  loss.cotangent(r.f, r.g, df, dg);
  fs::potential_vjp_options settings;
  settings.tolerance = 1e-12;
  const vjp_gradients grad = potential_gradients(solver, df, dg, 3, settings);
  const double defect = std::accumulate(df.begin(), df.end(), 0.0) - std::accumulate(dg.begin(), dg.end(), 0.0);
  EXPECT_NEAR(grad.report.gauge_defect, defect, 1e-12 * std::abs(defect));
  ASSERT_GT(std::abs(defect), 0.1);

  // Same result as the projected cotangent, given explicitly.
  std::vector<double> df_projected = df, dg_projected = dg;
  const double t = defect / static_cast<double>(n + m);
  for (double& v : df_projected) v -= t;
  for (double& v : dg_projected) v += t;
  const vjp_gradients projected = potential_gradients(solver, df_projected, dg_projected, 3, settings);
  EXPECT_NEAR(projected.report.gauge_defect, 0.0, 1e-12);
  EXPECT_LT(max_abs_diff(grad.x, projected.x), 1e-12 * max_abs(projected.x));
  EXPECT_LT(max_abs_diff(grad.y, projected.y), 1e-12 * max_abs(projected.y));

  // And the finite difference of L∘Π.
  potential_loss gauge_fixed = loss;
  gauge_fixed.value = [loss](std::vector<double> f, std::vector<double> g) {
    const double shift = (std::accumulate(f.begin(), f.end(), 0.0) - std::accumulate(g.begin(), g.end(), 0.0)) /
                         static_cast<double>(f.size() + g.size());
    for (double& v : f) v -= shift;
    for (double& v : g) v += shift;
    return loss.value(f, g);
  };
  const setup& plain = setups()[0];
  for (std::int64_t idx : {1L, 40L}) {
    const double fd = central_difference(gauge_fixed, p, plain, true, false, idx);
    EXPECT_NEAR(grad.x[idx], fd, 1e-6 * (std::abs(fd) + max_abs(grad.x))) << "dX[" << idx << "]";
  }
}

}  // namespace
