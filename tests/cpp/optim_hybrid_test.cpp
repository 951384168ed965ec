// Adam, and the Adam → second-order hybrid of SPEC §4 on a function with a saddle.
#include <gtest/gtest.h>

#include <cmath>
#include <iostream>

#include "optim_test_functions.hpp"

namespace {

using flashsinkhorn::optim::adam;
using flashsinkhorn::optim::adam_options;
using flashsinkhorn::optim::hybrid;
using flashsinkhorn::optim::hybrid_options;
using flashsinkhorn::optim::hybrid_result;
using flashsinkhorn::optim::optimizer_result;
using flashsinkhorn::optim::optimizer_status;
using flashsinkhorn::optim::second_order_method;

// Adam on a well-conditioned quadratic reaches its minimiser (to its first-order accuracy).
TEST(Adam, ConvergesOnQuadratic) {
  const auto a = optim_testing::random_spd(10, 1.0, 4);
  std::vector<double> b(10, 1.0);
  adam_options options;
  options.learning_rate = 0.05;
  options.max_iterations = 5000;
  options.gradient_tolerance = 1e-6;
  const optimizer_result r = adam(optim_testing::quadratic(a, b), std::vector<double>(10, 0.0), options);
  EXPECT_EQ(r.status, optimizer_status::converged);
  EXPECT_LE(r.gradient_norm, 1e-6);
  EXPECT_EQ(r.evaluations.hvps, 0);
  std::cout << "[ adam ] quadratic p = 10: " << r.iterations << " iterations\n";
}

// f = x² − y² + y⁴/4 from (0.5, 1e-3): λ_min(∇²f) = 3y² − 2 < 0 until |y| > √(2/3). Adam moves y
// by ≈ lr per step; Lanczos every 5 steps sees λ_min turn positive; the second-order method then
// converges to (0, √2).
void expect_hybrid_switches(second_order_method method) {
  hybrid_options options;
  options.adam.learning_rate = 0.05;
  options.adam.max_iterations = 500;
  options.check_every = 5;
  options.second_order = method;
  const hybrid_result r = hybrid(optim_testing::saddle(), {0.5, 1e-3}, options);

  ASSERT_GE(r.lambda_trace.size(), 2u);
  EXPECT_LT(r.lambda_trace.front().lambda_min, -1);
  EXPECT_TRUE(r.lambda_trace.front().certified_negative);
  EXPECT_GT(r.lambda_trace.back().lambda_min, 0);
  EXPECT_GT(r.switch_iteration, 0);
  EXPECT_EQ(r.switch_iteration, r.lambda_trace.back().iteration);
  EXPECT_EQ(r.switch_iteration, r.adam_phase.iterations);
  EXPECT_EQ(r.switch_iteration % options.check_every, 0);
  for (std::size_t i = 0; i + 1 < r.lambda_trace.size(); ++i) EXPECT_LE(r.lambda_trace[i].lambda_min, 0);
  EXPECT_EQ(r.status, optimizer_status::converged);
  EXPECT_GT(r.second_order_phase.iterations, 0);
  EXPECT_NEAR(r.theta[0], 0, 1e-8);
  EXPECT_NEAR(r.theta[1], std::sqrt(2.0), 1e-8);
  EXPECT_NEAR(r.value, -1, 1e-12);
  EXPECT_GT(r.evaluations.hvps, r.second_order_phase.evaluations.hvps);  // Lanczos' products count too

  std::cout << "[ hybrid ] " << (method == second_order_method::newton_cg ? "Newton-CG" : "trust region")
            << ": switch after " << r.switch_iteration << " Adam steps, then " << r.second_order_phase.iterations
            << " second-order iterations; λ_min trace:";
  for (const auto& sample : r.lambda_trace) std::cout << " " << sample.lambda_min;
  std::cout << "\n";
}

TEST(Hybrid, SwitchesFromAdamToTrustRegionAtPositiveCurvature) {
  expect_hybrid_switches(second_order_method::trust_region);
}

TEST(Hybrid, SwitchesFromAdamToNewtonCgAtPositiveCurvature) {
  expect_hybrid_switches(second_order_method::newton_cg);
}

// Convex from the start: the first check switches at once (switch_iteration 0, no Adam step).
TEST(Hybrid, ConvexStartSwitchesImmediately) {
  const auto a = optim_testing::random_spd(8, 0.5, 2);
  const hybrid_result r = hybrid(optim_testing::quadratic(a, std::vector<double>(8, 1.0)), std::vector<double>(8, 0.0));
  EXPECT_EQ(r.switch_iteration, 0);
  EXPECT_EQ(r.lambda_trace.size(), 1u);
  EXPECT_EQ(r.status, optimizer_status::converged);
}

// Adam's budget runs out inside the non-convex region: no switch, status max_iterations.
TEST(Hybrid, NoSwitchWhileCurvatureStaysNegative) {
  hybrid_options options;
  options.adam.learning_rate = 1e-4;
  options.adam.max_iterations = 20;
  options.check_every = 10;
  const hybrid_result r = hybrid(optim_testing::saddle(), {0.5, 1e-3}, options);
  EXPECT_EQ(r.switch_iteration, -1);
  EXPECT_EQ(r.status, optimizer_status::max_iterations);
  EXPECT_EQ(r.lambda_trace.size(), 3u);  // at 0, 10, 20 steps
  EXPECT_EQ(r.second_order_phase.iterations, 0);
}

}  // namespace
