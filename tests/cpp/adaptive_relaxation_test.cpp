// Adaptive over-relaxation (options::adaptive_relaxation, core/relaxation_control.hpp). Math facts
// of the controller: fed the error sequence of a linear iteration it recovers the plain rate θ
// through the SOR relation and moves ω to 2/(1 + √(1 − θ)) on its grid, from below or at the
// optimum (a fixed point); rises halve ω − 1, NaN counts as a rise. And a solve with it reaches the
// plain solve's solution in fewer iterations than a fixed ω on an ill-conditioned problem.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "core/relaxation_control.hpp"
#include "relaxation_problems.hpp"
#include "test_problems.hpp"

namespace fs = flashsinkhorn;
using flashsinkhorn::detail::relaxation_control;
using testing_support::make_problem;
using testing_support::relaxed_options;

namespace {

double optimum(double theta) { return 2 / (1 + std::sqrt(1 - theta)); }

// ω and ω* agree to the grid's resolution: 2 − ω on a grid of ratio 2^(1/8), so within 2^(1/16).
void expect_on_grid_near(double omega, double target) {
  const double ratio = (2 - omega) / (2 - target);
  EXPECT_LE(std::abs(std::log2(ratio)), 1.0 / 16 + 1e-12) << "ω = " << omega << ", ω* = " << target;
}

// The SOR iteration's rate at ω for a plain rate θ below the optimum: the larger root r of
// (r + ω − 1)² = r·ω²·θ.
double sor_rate(double omega, double theta) {
  const double b = omega * omega * theta - 2 * (omega - 1);
  return (b + std::sqrt(b * b - 4 * (omega - 1) * (omega - 1))) / 2;
}

// Checks every 10 iterations of an iteration whose error falls by `rate` per iteration.
void feed(relaxation_control& control, double rate, int checks, double& error) {
  for (int k = 0; k < checks; ++k) {
    error *= std::pow(rate, 10);
    control.observe(error, 10);
  }
}

TEST(AdaptiveRelaxation, PlainRateGivesTheOptimalOmega) {
  for (double theta : {0.9, 0.99, 0.999, 0.99999}) {
    relaxation_control control(1.0, true);
    double error = 1;
    control.observe(error, 10);  // the first check has no rate to read
    EXPECT_EQ(control.omega(), 1.0);
    feed(control, theta, 1, error);
    expect_on_grid_near(control.omega(), std::min(optimum(theta), relaxation_control::kMaxAdaptive));
    EXPECT_FALSE(control.fell_back());
  }
}

TEST(AdaptiveRelaxation, RelaxedRateIsReadThroughTheSorRelation) {
  // At ω = 1.5 below the optimum for θ = 0.999 (1.94) the observed rate is sor_rate(1.5, θ); the
  // controller recovers θ from it and jumps to ω*(θ), not to the optimum for the observed rate.
  const double theta = 0.999;
  relaxation_control control(1.5, true);
  double error = 1;
  control.observe(error, 10);
  feed(control, sor_rate(1.5, theta), 1, error);
  expect_on_grid_near(control.omega(), optimum(theta));
  EXPECT_GT(std::abs(control.omega() - optimum(sor_rate(1.5, theta))), 0.02);
}

TEST(AdaptiveRelaxation, AtTheOptimumOmegaStays) {
  // Above or at the optimum the SOR rate is ω − 1, and θ read from it makes ω optimal: no move.
  relaxation_control control(1.9, true);
  double error = 1;
  control.observe(error, 10);
  feed(control, 0.9, 3, error);  // r = ω − 1 for the controller's start 1.9
  const double settled = control.omega();
  expect_on_grid_near(settled, 1.9);
  feed(control, settled - 1, 5, error);
  EXPECT_EQ(control.omega(), settled);
}

TEST(AdaptiveRelaxation, RisesHalveOmegaMinusOneAndNanIsARise) {
  relaxation_control control(1.8, true);
  control.observe(1.0, 10);
  control.observe(1.0 * (1 + 1e-3), 10);  // within the noise margin: no action
  EXPECT_FALSE(control.fell_back());
  control.observe(1.5, 10);
  EXPECT_TRUE(control.fell_back());
  expect_on_grid_near(control.omega(), 1.4);
  control.observe(std::nan(""), 10);
  expect_on_grid_near(control.omega(), 1.2);
  // The fixed policy drops ω to 1 at the first rise, for good.
  relaxation_control fixed(1.8, false);
  fixed.observe(1.0, 10);
  fixed.observe(0.5, 10);
  EXPECT_EQ(fixed.omega(), 1.8);
  fixed.observe(0.9, 10);
  EXPECT_EQ(fixed.omega(), 1.0);
  fixed.observe(0.1, 10);
  EXPECT_EQ(fixed.omega(), 1.0);
}

TEST(AdaptiveRelaxation, SolveReachesThePlainSolutionInFewerIterationsThanAFixedOmega) {
  // relaxation_test.cpp's ill-conditioned problem, tol 1e-6 (measured: plain 3498 iterations, fixed
  // ω = 1.8 488, adaptive from 1.8 248).
  const testing_support::ill_conditioned data;
  const fs::problem p = make_problem(data.x, data.y, data.eps, 1.0);
  const fs::result plain = fs::solve(p, relaxed_options(1.0));
  const fs::result fixed = fs::solve(p, relaxed_options(1.8));
  const fs::result adaptive = fs::solve(p, relaxed_options(1.8, true));
  ASSERT_TRUE(plain.converged && fixed.converged && adaptive.converged);
  EXPECT_LT(adaptive.iterations, fixed.iterations) << "adaptive " << adaptive.iterations << ", fixed ω = 1.8 "
                                                   << fixed.iterations << ", plain " << plain.iterations;
  // The same solution: the balanced value is stationary in the potentials (relaxation_test.cpp).
  const double scale = std::max(testing_support::max_abs(plain.f), testing_support::max_abs(plain.g));
  EXPECT_NEAR(adaptive.cost, plain.cost, 1e-9 * scale);
}

TEST(AdaptiveRelaxation, RefusedWithTheSymmetricSolver) {
  const reference::cloud x = reference::random_cloud(20, 2, 1, 1.0);
  fs::options o = relaxed_options(1.0, true);
  o.solver = fs::solver_kind::symmetric;
  try {
    fs::solve(make_problem(x, x, 0.5, 1.0), o);
    FAIL() << "expected invalid_argument";
  } catch (const fs::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("adaptive_relaxation needs the alternating solver"), std::string::npos) << e.what();
  }
}

}  // namespace
