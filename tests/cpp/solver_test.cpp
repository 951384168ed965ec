// The CPU backend's solver against the float64 dense reference (reference/dense_sinkhorn.hpp):
// alternating, symmetric with the ε schedule, unbalanced, debiased; every precision mode; sizes
// 1, odd, one past a key tile (65) and a row group (49), and a few thousand.
#include <gtest/gtest.h>

#include <cmath>
#include <tuple>
#include <vector>

#include "core/epsilon_schedule.hpp"
#include "test_problems.hpp"

namespace fs = flashsinkhorn;
using namespace testing_support;

namespace {

struct shape {
  std::int64_t n, m, d;
};

// Potentials are compared after removing the gauge (f + c, g − c): shift by ⟨a, f⟩.
void expect_potentials_near(const fs::result& r, const reference::solution& ref, const reference::cloud& x,
                            double tol, const std::string& where) {
  double shift = 0;
  for (std::int64_t i = 0; i < x.count; ++i) shift += x.weights[i] * (r.f[i] - ref.f[i]);
  const double scale = std::max({1.0, max_abs(ref.f), max_abs(ref.g)});
  for (std::size_t i = 0; i < ref.f.size(); ++i) ASSERT_NEAR(r.f[i] - shift, ref.f[i], tol * scale) << where << " f[" << i << "]";
  for (std::size_t j = 0; j < ref.g.size(); ++j) ASSERT_NEAR(r.g[j] + shift, ref.g[j], tol * scale) << where << " g[" << j << "]";
}

class AlternatingVsDense : public ::testing::TestWithParam<std::tuple<shape, fs::precision, double>> {};

TEST_P(AlternatingVsDense, SameIteratesAndValue) {
  const auto [sh, mode, s] = GetParam();
  const std::uint64_t seed = 1000 + sh.n * 31 + sh.m * 7 + sh.d;
  const reference::cloud x = reference::random_cloud(sh.n, sh.d, seed);
  const reference::cloud y = reference::random_cloud(sh.m, sh.d, seed + 1, 1.0, 0.5);
  const double eps = 0.5 * static_cast<double>(sh.d) * s;  // ~ a quarter of the mean cost: a moderately sharp plan
  const int iterations = 30;
  const reference::solution ref = reference::alternating(x, y, eps, s, iterations);
  const fs::result r = fs::solver(make_problem(x, y, eps, s), fixed_iterations(iterations, mode)).solve();
  const std::string where = describe(sh.n, sh.m, sh.d, seed);
  EXPECT_EQ(r.iterations, iterations);
  // Operand rounding (tf32/bf16) perturbs C by ~u·‖x‖‖y‖·s; the reference runs on exact inputs.
  const double tol = relative_tolerance(mode);
  EXPECT_NEAR(r.cost, ref.value, tol * std::max(1.0, std::abs(ref.value))) << where;
  expect_potentials_near(r, ref, x, tol, where);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, AlternatingVsDense,
    ::testing::Combine(::testing::Values(shape{1, 1, 1}, shape{1, 7, 2}, shape{7, 1, 3}, shape{37, 65, 7},
                                         shape{49, 97, 64}, shape{130, 64, 1}, shape{300, 257, 2}),
                       ::testing::Values(fs::precision::fp64, fs::precision::fp32, fs::precision::tf32,
                                         fs::precision::bf16),
                       ::testing::Values(1.0, 0.5)));

TEST(SolverVsDense, ConvergedLargeProblemFp64AndFp32) {
  const reference::cloud x = reference::random_cloud(1000, 7, 11);
  const reference::cloud y = reference::random_cloud(700, 7, 12, 1.0, 0.3);
  const double eps = 1.0;
  const reference::solution ref = reference::alternating(x, y, eps, 1.0, 200);
  for (fs::precision mode : {fs::precision::fp64, fs::precision::fp32}) {
    fs::options o = fixed_iterations(1000, mode);
    o.tolerance = mode == fs::precision::fp64 ? 1e-12 : 1e-6;
    const fs::result r = fs::solver(make_problem(x, y, eps, 1.0), o).solve();
    EXPECT_TRUE(r.converged) << "marginal error " << r.marginal_error;
    EXPECT_NEAR(r.cost, ref.value, (mode == fs::precision::fp64 ? 1e-9 : 1e-5) * std::abs(ref.value));
  }
}

TEST(SolverVsDense, SymmetricGeomLossLoopWithSchedule) {
  const reference::cloud x = reference::random_cloud(60, 3, 21);
  const reference::cloud y = reference::random_cloud(45, 3, 22, 1.0, 1.0);
  const double eps = 0.05, s = 0.5;
  for (bool debias : {false, true}) {
    for (std::optional<double> reach : {std::optional<double>{}, std::optional<double>{1.5}}) {
      fs::options o = fixed_iterations(0, fs::precision::fp64);
      o.solver = fs::solver_kind::symmetric;
      o.scaling = 0.7;
      o.debias = debias;
      o.reach_x = o.reach_y = reach;
      fs::solver solver(make_problem(x, y, eps, s), o);
      const fs::result r = solver.solve();
      // Schedule from the same diameter GeomLoss would use.
      double diam2 = 0;
      for (std::int64_t k = 0; k < 3; ++k) {
        double lo = 1e300, hi = -1e300;
        for (const auto* c : {&x, &y}) for (std::int64_t i = 0; i < c->count; ++i) { lo = std::min(lo, c->points[i * 3 + k]); hi = std::max(hi, c->points[i * 3 + k]); }
        diam2 += (hi - lo) * (hi - lo);
      }
      const auto schedule = fs::detail::epsilon_schedule(std::sqrt(diam2), eps, 0.7);
      std::optional<double> rho;
      if (reach) rho = *reach * *reach;
      const reference::solution ref = reference::symmetric(x, y, schedule, s, rho, debias);
      EXPECT_EQ(r.iterations, static_cast<int>(schedule.size()));
      EXPECT_NEAR(r.cost, ref.value, 1e-10 * std::max(1.0, std::abs(ref.value))) << "debias " << debias << " reach " << reach.value_or(0);
      for (std::size_t i = 0; i < ref.f.size(); ++i) ASSERT_NEAR(r.f[i], ref.f[i], 1e-10) << i;
    }
  }
}

TEST(SolverVsDense, UnbalancedAndDebiasedAlternating) {
  const reference::cloud x = reference::random_cloud(40, 2, 31);
  const reference::cloud y = reference::random_cloud(55, 2, 32, 1.0, 0.7);
  const double eps = 0.2;
  for (bool debias : {false, true}) {
    fs::options o = fixed_iterations(25, fs::precision::fp64);
    o.reach_x = 2.0;
    o.reach_y = 0.5;
    o.debias = debias;
    const fs::result r = fs::solver(make_problem(x, y, eps, 1.0), o).solve();
    const reference::solution ref = reference::alternating(x, y, eps, 1.0, 25, 4.0, 0.25, debias);
    EXPECT_NEAR(r.cost, ref.value, 1e-11 * std::max(1.0, std::abs(ref.value)));
    for (std::size_t j = 0; j < ref.g.size(); ++j) ASSERT_NEAR(r.g[j], ref.g[j], 1e-10);
  }
}

TEST(SolverFacts, SinglePointPairCostsExactly) {
  const reference::cloud x{1, 3, {1.0, 2.0, 3.0}, {1.0}, {}};
  const reference::cloud y{1, 3, {0.0, -1.0, 4.0}, {1.0}, {}};
  for (fs::precision mode : {fs::precision::fp64, fs::precision::fp32}) {
    const fs::result r = fs::solver(make_problem(x, y, 0.3, 0.5), fixed_iterations(3, mode)).solve();
    EXPECT_NEAR(r.cost, 0.5 * 11.0, 1e-12 * 50 + (mode == fs::precision::fp32 ? 1e-5 : 0));
    EXPECT_NEAR(r.primal_cost, 0.5 * 11.0, 1e-5);
    EXPECT_NEAR(r.marginal_error, 0.0, 1e-6);
  }
}

TEST(SolverFacts, DebiasedDivergenceOfACloudWithItselfIsZero) {
  const reference::cloud x = reference::random_cloud(80, 4, 41);
  fs::options o = fixed_iterations(5000, fs::precision::fp64);
  o.debias = true;
  o.tolerance = 1e-11;
  const fs::result r = fs::solver(make_problem(x, x, 2.0, 1.0), o).solve();
  EXPECT_TRUE(r.converged) << r.marginal_error;
  EXPECT_NEAR(r.cost, 0.0, 1e-9);  // both potentials solve OT(a, a) to the marginal error
}

TEST(SolverFacts, TranslationAndPermutationInvariance) {
  const reference::cloud x = reference::random_cloud(50, 3, 51);
  reference::cloud y = reference::random_cloud(70, 3, 52);
  const fs::options o = fixed_iterations(40, fs::precision::fp64);
  const fs::result base = fs::solver(make_problem(x, y, 0.2, 1.0), o).solve();
  reference::cloud xs = x, ys = y;
  for (double& v : xs.points) v += 100.0;
  for (double& v : ys.points) v += 100.0;
  const fs::result shifted = fs::solver(make_problem(xs, ys, 0.2, 1.0), o).solve();
  EXPECT_NEAR(shifted.cost, base.cost, 1e-10 * std::abs(base.cost));
  reference::cloud yp = y;
  for (std::int64_t j = 0; j < y.count; ++j) {
    const std::int64_t src = (j * 17) % y.count;  // 17 is coprime to 70: a permutation
    yp.weights[j] = y.weights[src];
    for (std::int64_t k = 0; k < 3; ++k) yp.points[j * 3 + k] = y.points[src * 3 + k];
  }
  const fs::result permuted = fs::solver(make_problem(x, yp, 0.2, 1.0), o).solve();
  EXPECT_NEAR(permuted.cost, base.cost, 1e-11 * std::abs(base.cost));
}

TEST(SolverFacts, WarmStartContinuesWhereTheLastSolveStopped) {
  const reference::cloud x = reference::random_cloud(30, 2, 61);
  const reference::cloud y = reference::random_cloud(20, 2, 62);
  fs::solver twice(make_problem(x, y, 0.1, 1.0), fixed_iterations(10, fs::precision::fp64));
  twice.solve();
  const fs::result second = twice.solve();
  const fs::result once = fs::solver(make_problem(x, y, 0.1, 1.0), fixed_iterations(20, fs::precision::fp64)).solve();
  EXPECT_NEAR(second.cost, once.cost, 1e-12 * std::abs(once.cost));
}

TEST(SolverFacts, ProgressIsReportedAndFinishes) {
  const reference::cloud x = reference::random_cloud(30, 2, 71);
  fs::options o = fixed_iterations(50, fs::precision::fp32);
  o.check_every = 10;
  int calls = 0;
  bool finished = false;
  o.on_progress = [&](const fs::progress& p) { ++calls; finished = p.finished; };
  fs::solver(make_problem(x, x, 0.5, 1.0), o).solve();
  EXPECT_EQ(calls, 5);  // checks at 10, 20, 30, 40; the one at 50 is the final report
  EXPECT_TRUE(finished);
}

// With ε-scaling the schedule reports too, every check_every stages at that stage's ε with its own
// marginal error; the callback changes none of the numbers.
TEST(SolverFacts, TheScheduleReportsAtItsOwnEpsAndChangesNothing) {
  const reference::cloud x = reference::random_cloud(40, 2, 72);
  const reference::cloud y = reference::random_cloud(35, 2, 73, 1.0, 0.4);
  fs::options o = fixed_iterations(25, fs::precision::fp64);
  o.scaling = 0.7;
  o.check_every = 4;
  const fs::result quiet = fs::solver(make_problem(x, y, 0.05, 1.0), o).solve();
  std::vector<fs::progress> reports;
  o.on_progress = [&](const fs::progress& p) { reports.push_back(p); };
  const fs::result reported = fs::solver(make_problem(x, y, 0.05, 1.0), o).solve();
  EXPECT_EQ(reported.cost, quiet.cost);
  EXPECT_EQ(reported.marginal_error, quiet.marginal_error);
  const int stages = quiet.iterations - 25;
  ASSERT_GT(stages, 8);
  std::vector<int> expected;
  for (int k = 4; k <= stages; k += 4) expected.push_back(k);                 // the schedule's
  for (int k = stages + 4; k < quiet.iterations; k += 4) expected.push_back(k);  // the loop's checks
  expected.push_back(quiet.iterations);                                      // the end
  ASSERT_EQ(reports.size(), expected.size());
  for (std::size_t i = 0; i < reports.size(); ++i) {
    EXPECT_EQ(reports[i].iteration, expected[i]) << i;
    EXPECT_EQ(reports[i].max_iterations, quiet.iterations);
    EXPECT_TRUE(std::isfinite(reports[i].marginal_error) && reports[i].marginal_error > 0) << i;
    if (reports[i].iteration < stages) {
      EXPECT_GT(reports[i].eps, 0.05) << i;  // an earlier, larger ε of the schedule (its last stage is ε)
      if (i > 0) {
        EXPECT_LT(reports[i].eps, reports[i - 1].eps) << i;
      }
    } else {
      EXPECT_EQ(reports[i].eps, 0.05) << i;
    }
  }
  EXPECT_TRUE(reports.back().finished);
  EXPECT_EQ(reports.back().marginal_error, quiet.marginal_error);
}

}  // namespace

namespace {

TEST(SolverVsDense, UnnormalisedMassesAreKept) {
  reference::cloud x = reference::random_cloud(30, 2, 121);
  reference::cloud y = reference::random_cloud(25, 2, 122, 1.0, 0.5);
  for (double& w : x.weights) w *= 2.5;  // Σa = Σb = 2.5: balanced, but not probability measures
  for (double& w : y.weights) w *= 2.5;
  fs::options o = fixed_iterations(30, fs::precision::fp64);
  o.normalize_weights = false;
  for (std::optional<double> reach : {std::optional<double>{}, std::optional<double>{1.0}}) {
    o.reach_x = o.reach_y = reach;
    std::optional<double> rho;
    if (reach) rho = *reach * *reach;
    const fs::result r = fs::solver(make_problem(x, y, 0.3, 1.0), o).solve();
    const reference::solution ref = reference::alternating(x, y, 0.3, 1.0, 30, rho, rho);
    EXPECT_NEAR(r.cost, ref.value, 1e-11 * std::abs(ref.value)) << "reach " << reach.value_or(0);
  }
}

TEST(SolverVsDense, DiameterOptionStartsTheSchedule) {
  const reference::cloud x = reference::random_cloud(20, 2, 131);
  const reference::cloud y = reference::random_cloud(20, 2, 132);
  fs::options o = fixed_iterations(0, fs::precision::fp64);
  o.solver = fs::solver_kind::symmetric;
  o.scaling = 0.5;
  o.diameter = 10.0;
  o.debias = true;
  const fs::result r = fs::solver(make_problem(x, y, 0.01, 0.5), o).solve();
  const auto schedule = fs::detail::epsilon_schedule(10.0, 0.01, 0.5);
  const reference::solution ref = reference::symmetric(x, y, schedule, 0.5, std::nullopt, true);
  EXPECT_EQ(r.iterations, static_cast<int>(schedule.size()));
  EXPECT_NEAR(r.cost, ref.value, 1e-10 * std::max(1.0, std::abs(ref.value)));
  ASSERT_EQ(r.f_aa.size(), ref.f_aa.size());
  for (std::size_t i = 0; i < ref.f_aa.size(); ++i) ASSERT_NEAR(r.f_aa[i], ref.f_aa[i], 1e-10);
}

}  // namespace
