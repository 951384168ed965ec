// Adam, and the Adam → second-order hybrid of SPEC §4 on a function with a saddle.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <iostream>
#include <thread>

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

// A slow objective (each gradient sleeps 20 ms, each Hessian product `hvp_ms`) and a 0.15 s budget:
// the run stops between iterations with status time_limit, long before its iteration budget, and keeps
// what it did.
flashsinkhorn::optim::objective slow(flashsinkhorn::optim::objective f, int hvp_ms = 0) {
  using flashsinkhorn::optim::const_span;
  using flashsinkhorn::optim::mutable_span;
  auto gradient = f.gradient;
  f.gradient = [gradient](const_span theta, mutable_span g) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    return gradient(theta, g);
  };
  auto hvp = f.hvp;
  f.hvp = [hvp, hvp_ms](const_span theta, const_span v, mutable_span product) {
    std::this_thread::sleep_for(std::chrono::milliseconds(hvp_ms));
    hvp(theta, v, product);
  };
  return f;
}

TEST(Adam, StopsAtItsWallTimeBudget) {
  adam_options options;
  options.learning_rate = 1e-4;
  options.max_iterations = 10000;
  options.max_seconds = 0.15;
  const auto start = std::chrono::steady_clock::now();
  const optimizer_result r = adam(slow(optim_testing::saddle()), {0.5, 1e-3}, options);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(r.status, optimizer_status::time_limit);
  EXPECT_GE(r.iterations, 2);
  EXPECT_LE(r.iterations, 10);                      // ≈ 0.15 s / 20 ms, one iteration of overshoot at most
  EXPECT_EQ(r.history.size(), static_cast<std::size_t>(r.iterations));
  EXPECT_LT(seconds, 0.15 + 0.1);
}

TEST(Hybrid, StopsAtItsWallTimeBudgetAndKeepsItsTrace) {
  hybrid_options options;
  options.adam.learning_rate = 1e-4;  // stays in the non-convex region
  options.adam.max_iterations = 10000;
  options.check_every = 2;
  options.max_seconds = 0.15;
  const hybrid_result r = hybrid(slow(optim_testing::saddle()), {0.5, 1e-3}, options);
  EXPECT_EQ(r.status, optimizer_status::time_limit);
  EXPECT_EQ(r.switch_iteration, -1);
  EXPECT_GE(r.lambda_trace.size(), 1u);
  EXPECT_LT(r.lambda_trace.front().lambda_min, 0);
  EXPECT_LE(r.adam_phase.iterations, 10);
}

// The second-order phase gets what is left of the run's budget: a convex start switches at once, but
// the Lanczos check (Hessian products of 40 ms, several of them) spends the 0.15 s, so the trust region
// evaluates its start and stops instead of converging.
TEST(Hybrid, SecondOrderPhaseSharesTheBudget) {
  const auto a = optim_testing::random_spd(8, 0.5, 2);
  hybrid_options options;
  options.max_seconds = 0.15;
  const hybrid_result r = hybrid(slow(optim_testing::quadratic(a, std::vector<double>(8, 1.0)), 40),
                                 std::vector<double>(8, 0.0), options);
  ASSERT_EQ(r.lambda_trace.size(), 1u);
  EXPECT_GE(r.lambda_trace.front().lanczos_steps, 4);  // ≥ 0.16 s of products
  EXPECT_EQ(r.switch_iteration, 0);
  EXPECT_EQ(r.status, optimizer_status::time_limit);
  EXPECT_EQ(r.second_order_phase.status, optimizer_status::time_limit);
  EXPECT_EQ(r.second_order_phase.iterations, 0);
}

// f = −θ₀² + θ₀⁴/4 + Σ_{k≥1} (k + 1)·θ_k²/2 on R^12: ∇²f = diag(3θ₀² − 2, 2, …, 12), negative along e₀
// until |θ₀| > √(2/3); minima θ₀ = ±√2, θ_k = 0. A random Lanczos start has Rayleigh quotient ≈ the mean
// eigenvalue (≈ 6), so certifying λ_min < 0 takes several products; a start near e₀ takes one.
flashsinkhorn::optim::objective wide_saddle() {
  using flashsinkhorn::optim::const_span;
  using flashsinkhorn::optim::mutable_span;
  flashsinkhorn::optim::objective f;
  f.gradient = [](const_span t, mutable_span g) {
    double value = -t[0] * t[0] + 0.25 * std::pow(t[0], 4);
    g[0] = -2 * t[0] + std::pow(t[0], 3);
    for (std::size_t k = 1; k < t.size(); ++k) {
      value += 0.5 * static_cast<double>(k + 1) * t[k] * t[k];
      g[k] = static_cast<double>(k + 1) * t[k];
    }
    return value;
  };
  f.hvp = [](const_span t, const_span v, mutable_span hv) {
    hv[0] = (3 * t[0] * t[0] - 2) * v[0];
    for (std::size_t k = 1; k < t.size(); ++k) hv[k] = static_cast<double>(k + 1) * v[k];
  };
  return f;
}

// Warm-started checks (the default) certify most negative checks after the first with one Hessian
// product; fresh random starts need several. Both runs switch at the same Adam step (the checks'
// verdicts agree) and reach the same minimum.
TEST(Hybrid, WarmLanczosCertifiesNegativeChecksInOneProduct) {
  hybrid_options options;
  options.adam.learning_rate = 0.02;
  options.adam.max_iterations = 2000;
  options.check_every = 5;
  std::vector<double> start(12, 0.3);
  start[0] = 1e-3;
  const hybrid_result warm = hybrid(wide_saddle(), start, options);
  options.warm_lanczos = false;
  const hybrid_result cold = hybrid(wide_saddle(), start, options);

  ASSERT_GE(warm.lambda_trace.size(), 4u);
  ASSERT_EQ(warm.lambda_trace.size(), cold.lambda_trace.size());
  EXPECT_EQ(warm.switch_iteration, cold.switch_iteration);
  int warm_products = 0, cold_products = 0, warm_single = 0;
  for (std::size_t i = 0; i + 1 < warm.lambda_trace.size(); ++i) {  // the negative checks
    EXPECT_TRUE(warm.lambda_trace[i].certified_negative);
    EXPECT_TRUE(cold.lambda_trace[i].certified_negative);
    if (i > 0 && warm.lambda_trace[i].lanczos_steps == 1) ++warm_single;
    warm_products += warm.lambda_trace[i].lanczos_steps;
    cold_products += cold.lambda_trace[i].lanczos_steps;
  }
  // A check certified after one product passes its start vector on as the Ritz vector; its weight on the
  // positive directions then makes later Rayleigh quotients rise as λ_min nears 0, and the last
  // negative checks take two products.
  EXPECT_GE(2 * warm_single, static_cast<int>(warm.lambda_trace.size()) - 2);
  EXPECT_GT(cold_products, 2 * warm_products);
  EXPECT_GT(warm.lambda_trace.back().lambda_min, 0);  // the switching check converged positive
  EXPECT_FALSE(warm.lambda_trace.back().certified_negative);
  for (const hybrid_result* r : {&warm, &cold}) {
    EXPECT_EQ(r->status, optimizer_status::converged);
    EXPECT_NEAR(std::fabs(r->theta[0]), std::sqrt(2.0), 1e-6);
  }
  std::cout << "[ hybrid ] wide saddle: " << warm.lambda_trace.size() << " checks, Hessian products in the negative "
            << "checks: warm " << warm_products << ", fresh random starts " << cold_products << "\n";
}

}  // namespace
