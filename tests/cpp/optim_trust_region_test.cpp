// Steihaug–Toint trust region on problems with known minimisers, and its escape from a saddle.
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <cmath>
#include <iostream>

#include "optim_test_functions.hpp"

namespace {

using flashsinkhorn::optim::optimizer_result;
using flashsinkhorn::optim::optimizer_status;
using flashsinkhorn::optim::trust_region;
using flashsinkhorn::optim::trust_region_options;

struct quadratic_case {
  optim_testing::dense_symmetric a;
  std::vector<double> b;
  Eigen::VectorXd minimiser;
};

quadratic_case make_quadratic(int size) {
  quadratic_case q{optim_testing::random_spd(size, 0.1, 9), std::vector<double>(static_cast<std::size_t>(size)), {}};
  for (int i = 0; i < size; ++i) q.b[static_cast<std::size_t>(i)] = std::cos(0.5 + i);
  const Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>> m(
      q.a.values.data(), size, size);
  q.minimiser = Eigen::MatrixXd(m).ldlt().solve(Eigen::Map<const Eigen::VectorXd>(q.b.data(), size));
  return q;
}

// Radius larger than the Newton step and an exact inner solve: one step.
TEST(TrustRegion, QuadraticInOneStepWithLargeRadius) {
  const quadratic_case q = make_quadratic(30);
  trust_region_options options;
  options.initial_radius = options.max_radius = 1e3;
  options.forcing.initial = options.forcing.maximum = 1e-12;
  options.gradient_tolerance = 1e-9;
  const optimizer_result r = trust_region(optim_testing::quadratic(q.a, q.b), std::vector<double>(30, 0.0), options);
  EXPECT_EQ(r.status, optimizer_status::converged);
  EXPECT_EQ(r.iterations, 1);
  for (int i = 0; i < 30; ++i) EXPECT_NEAR(r.theta[static_cast<std::size_t>(i)], q.minimiser(i), 1e-9);
}

// Default options (Δ₀ = 1, smaller than ‖θ*‖): boundary steps with ρ = 1 double Δ; a few steps.
TEST(TrustRegion, QuadraticInFewStepsFromSmallRadius) {
  const quadratic_case q = make_quadratic(30);
  trust_region_options options;
  options.gradient_tolerance = 1e-9;
  const optimizer_result r = trust_region(optim_testing::quadratic(q.a, q.b), std::vector<double>(30, 0.0), options);
  EXPECT_EQ(r.status, optimizer_status::converged);
  EXPECT_LE(r.iterations, 12);
  for (int i = 0; i < 30; ++i) EXPECT_NEAR(r.theta[static_cast<std::size_t>(i)], q.minimiser(i), 1e-8);
  std::cout << "[ trust region ] quadratic p = 30, ‖θ*‖ = " << q.minimiser.norm() << ", Δ₀ = 1: " << r.iterations
            << " iterations\n";
}

void expect_rosenbrock_solved(int dimension) {
  trust_region_options options;
  int callbacks = 0;
  options.on_iteration = [&callbacks](const auto&) { ++callbacks; };
  const optimizer_result r =
      trust_region(optim_testing::extended_rosenbrock(), optim_testing::rosenbrock_start(dimension), options);
  EXPECT_EQ(r.status, optimizer_status::converged);
  EXPECT_LT(optim_testing::max_abs_difference(r.theta, 1), 1e-8);
  EXPECT_EQ(callbacks, r.iterations);
  EXPECT_LT(r.iterations, 100);
  int rejected = 0;
  for (const auto& step : r.history) rejected += step.accepted ? 0 : 1;
  std::cout << "[ trust region ] extended Rosenbrock p = " << dimension << ": " << r.iterations << " iterations ("
            << rejected << " rejected), " << r.evaluations.hvps << " HVPs\n";
}

TEST(TrustRegion, Rosenbrock2d) { expect_rosenbrock_solved(2); }

TEST(TrustRegion, ExtendedRosenbrock100d) { expect_rosenbrock_solved(100); }

// From the saddle plus 1e-6 the first CG direction has negative curvature: the step goes to the
// boundary (‖s‖ = Δ₀) and the iteration converges to a minimum (0, ±√2).
TEST(TrustRegion, EscapesSaddleToTheBoundary) {
  trust_region_options options;
  options.initial_radius = 0.5;
  const optimizer_result r = trust_region(optim_testing::saddle(), {1e-8, 1e-6}, options);
  EXPECT_EQ(r.status, optimizer_status::converged);
  const auto& first = r.history.at(0);
  EXPECT_TRUE(first.negative_curvature);
  EXPECT_TRUE(first.accepted);
  EXPECT_NEAR(first.step_norm, 0.5, 1e-12);
  EXPECT_NEAR(r.value, -1, 1e-12);
  EXPECT_NEAR(std::fabs(r.theta[1]), std::sqrt(2.0), 1e-8);
  std::cout << "[ trust region ] saddle escape: " << r.iterations << " iterations\n";
}

// A value-less objective: trial points go through the gradient callback and an accepted trial's
// gradient is reused, so there is one gradient call per iteration plus the initial one.
TEST(TrustRegion, GradientOnlyObjectiveReusesAcceptedTrials) {
  auto f = optim_testing::extended_rosenbrock();
  f.value = nullptr;
  const optimizer_result r = trust_region(f, optim_testing::rosenbrock_start(2));
  EXPECT_EQ(r.status, optimizer_status::converged);
  EXPECT_EQ(r.evaluations.values, 0);
  EXPECT_EQ(r.evaluations.gradients, r.iterations + 1);
}

}  // namespace

namespace {

// p = 1: f(θ) = e^θ − 2θ, minimiser ln 2 — both second-order methods, from far away.
TEST(SecondOrderOneDimensional, ExpMinusLinear) {
  flashsinkhorn::optim::objective f;
  f.value = [](flashsinkhorn::optim::const_span t) { return std::exp(t[0]) - 2 * t[0]; };
  f.gradient = [](flashsinkhorn::optim::const_span t, flashsinkhorn::optim::mutable_span g) {
    g[0] = std::exp(t[0]) - 2;
    return std::exp(t[0]) - 2 * t[0];
  };
  f.hvp = [](flashsinkhorn::optim::const_span t, flashsinkhorn::optim::const_span v,
             flashsinkhorn::optim::mutable_span hv) { hv[0] = std::exp(t[0]) * v[0]; };
  const optimizer_result tr = trust_region(f, {-5.0});
  const optimizer_result newton = flashsinkhorn::optim::newton_cg(f, {-5.0});
  EXPECT_EQ(tr.status, optimizer_status::converged);
  EXPECT_EQ(newton.status, optimizer_status::converged);
  EXPECT_NEAR(tr.theta[0], std::log(2.0), 1e-9);
  EXPECT_NEAR(newton.theta[0], std::log(2.0), 1e-9);
}

}  // namespace
