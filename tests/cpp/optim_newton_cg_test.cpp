// Newton-CG on problems with known minimisers: a quadratic (one exact step), 2-d and 100-d extended
// Rosenbrock, and escape from a saddle through the negative-curvature step.
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <cmath>
#include <iostream>

#include "optim_test_functions.hpp"

namespace {

using flashsinkhorn::optim::negative_curvature_step;
using flashsinkhorn::optim::newton_cg;
using flashsinkhorn::optim::newton_cg_options;
using flashsinkhorn::optim::optimizer_result;
using flashsinkhorn::optim::optimizer_status;

// A = random SPD (λ_min ≥ 0.1), b random: the minimiser A⁻¹b in one Newton step when the inner CG
// solves to 1e-12.
TEST(NewtonCg, QuadraticInOneExactStep) {
  const int size = 30;
  const auto a = optim_testing::random_spd(size, 0.1, 5);
  std::vector<double> b(size);
  for (int i = 0; i < size; ++i) b[static_cast<std::size_t>(i)] = std::sin(1.0 + i);
  newton_cg_options options;
  options.forcing.initial = 1e-12;
  options.forcing.maximum = 1e-12;
  options.gradient_tolerance = 1e-9;
  const optimizer_result r = newton_cg(optim_testing::quadratic(a, b), std::vector<double>(size, 0.0), options);

  const Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>> m(a.values.data(),
                                                                                                size, size);
  const Eigen::VectorXd exact = Eigen::MatrixXd(m).ldlt().solve(Eigen::Map<const Eigen::VectorXd>(b.data(), size));
  EXPECT_EQ(r.status, optimizer_status::converged);
  EXPECT_EQ(r.iterations, 1);
  EXPECT_EQ(r.history.at(0).step_size, 1);
  for (int i = 0; i < size; ++i) EXPECT_NEAR(r.theta[static_cast<std::size_t>(i)], exact(i), 1e-9);
  std::cout << "[ newton-cg ] quadratic p = 30: 1 step, " << r.history[0].cg_iterations << " CG iterations\n";
}

void expect_rosenbrock_solved(int dimension, negative_curvature_step policy) {
  newton_cg_options options;
  options.on_negative_curvature = policy;
  int callbacks = 0;
  options.on_iteration = [&callbacks](const auto&) { ++callbacks; };
  const optimizer_result r =
      newton_cg(optim_testing::extended_rosenbrock(), optim_testing::rosenbrock_start(dimension), options);
  EXPECT_EQ(r.status, optimizer_status::converged);
  EXPECT_LE(r.gradient_norm, options.gradient_tolerance);
  // ‖θ − 1‖ ≲ ‖H⁻¹‖‖g‖ with λ_min(H*) ≈ 0.4 at the minimiser.
  EXPECT_LT(optim_testing::max_abs_difference(r.theta, 1), 1e-7);
  EXPECT_EQ(callbacks, r.iterations);
  EXPECT_EQ(static_cast<int>(r.history.size()), r.iterations);
  EXPECT_LT(r.iterations, 100);
  std::cout << "[ newton-cg ] extended Rosenbrock p = " << dimension << " ("
            << (policy == negative_curvature_step::curvature_direction ? "curvature direction" : "steepest descent")
            << "): " << r.iterations << " iterations, "
            << r.evaluations.hvps << " HVPs, " << r.evaluations.values << " trial values, f = " << r.value
            << "\n";
}

TEST(NewtonCg, Rosenbrock2d) {
  expect_rosenbrock_solved(2, negative_curvature_step::curvature_direction);
  expect_rosenbrock_solved(2, negative_curvature_step::steepest_descent);
}

TEST(NewtonCg, ExtendedRosenbrock100d) {
  expect_rosenbrock_solved(100, negative_curvature_step::curvature_direction);
  expect_rosenbrock_solved(100, negative_curvature_step::steepest_descent);
}

// Superlinear convergence at the end: ‖g‖ falls faster than linearly over the last steps.
TEST(NewtonCg, ForcingTermsShrinkNearTheMinimum) {
  const optimizer_result r =
      newton_cg(optim_testing::extended_rosenbrock(), optim_testing::rosenbrock_start(2), newton_cg_options{});
  ASSERT_GE(r.history.size(), 3u);
  const auto& last = r.history[r.history.size() - 1];
  const auto& before = r.history[r.history.size() - 2];
  const auto& earlier = r.history[r.history.size() - 3];
  EXPECT_LT(last.gradient_norm / before.gradient_norm, before.gradient_norm / earlier.gradient_norm);
  EXPECT_LT(last.forcing, 0.5);
}

// From the saddle of x² − y² + y⁴/4 plus 1e-6: the first CG direction has negative curvature; both
// policies leave the saddle and reach a minimum (0, ±√2), f = −1.
TEST(NewtonCg, EscapesSaddleAlongNegativeCurvature) {
  for (const auto policy : {negative_curvature_step::curvature_direction, negative_curvature_step::steepest_descent}) {
    SCOPED_TRACE(policy == negative_curvature_step::curvature_direction ? "curvature_direction" : "steepest_descent");
    newton_cg_options options;
    options.on_negative_curvature = policy;
    const optimizer_result r = newton_cg(optim_testing::saddle(), {1e-8, 1e-6}, options);
    EXPECT_EQ(r.status, optimizer_status::converged);
    EXPECT_TRUE(r.history.at(0).negative_curvature);
    EXPECT_NEAR(r.value, -1, 1e-12);
    EXPECT_NEAR(std::fabs(r.theta[1]), std::sqrt(2.0), 1e-8);
    EXPECT_NEAR(r.theta[0], 0, 1e-8);
    std::cout << "[ newton-cg ] saddle escape ("
              << (policy == negative_curvature_step::curvature_direction ? "curvature direction" : "steepest descent")
              << "): " << r.iterations << " iterations\n";
  }
}

// Started exactly at the stationary point, Newton-CG has nothing to do: ∇f = 0 is "converged" (the
// hybrid's Lanczos check is what tells a saddle from a minimum).
TEST(NewtonCg, ExactSaddleIsStationary) {
  const optimizer_result r = newton_cg(optim_testing::saddle(), {0, 0});
  EXPECT_EQ(r.status, optimizer_status::converged);
  EXPECT_EQ(r.iterations, 0);
}

}  // namespace
