// Resuming Adam and the hybrid from the state a run ended with (adam_moments, hybrid_state): a run
// cut short and continued ends where the uninterrupted run ends, step for step.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "flashsinkhorn/error.hpp"
#include "optim_test_functions.hpp"

namespace {

using flashsinkhorn::optim::adam;
using flashsinkhorn::optim::adam_moments;
using flashsinkhorn::optim::adam_options;
using flashsinkhorn::optim::adam_result;
using flashsinkhorn::optim::hybrid;
using flashsinkhorn::optim::hybrid_options;
using flashsinkhorn::optim::hybrid_result;
using flashsinkhorn::optim::optimizer_status;

// 30 steps in one run against 13 + 17 in two: the same iterate, bit for bit (the same arithmetic on
// the same moments), the step numbers continuing, iterations counting both runs.
TEST(AdamResume, ContinuesExactlyWhereTheFirstRunStopped) {
  const auto a = optim_testing::random_spd(6, 0.5, 11);
  const std::vector<double> b(6, 1.0);
  const auto f = optim_testing::quadratic(a, b);
  const std::vector<double> start(6, 0.3);

  const adam_result whole = adam(f, start, optim_testing::adam_settings(30));
  const adam_result first = adam(f, start, optim_testing::adam_settings(13));
  ASSERT_EQ(first.status, optimizer_status::max_iterations);
  EXPECT_EQ(first.moments.steps, 13);
  adam_options more = optim_testing::adam_settings(30);
  more.initial = first.moments;
  const adam_result second = adam(f, first.theta, more);

  EXPECT_EQ(second.iterations, 30);
  ASSERT_EQ(second.history.size(), 17u);
  EXPECT_EQ(second.history.front().iteration, 14);
  EXPECT_EQ(second.moments.steps, 30);
  for (std::size_t i = 0; i < start.size(); ++i) {
    EXPECT_EQ(second.theta[i], whole.theta[i]) << i;
    EXPECT_EQ(second.moments.first[i], whole.moments.first[i]) << i;
    EXPECT_EQ(second.moments.second[i], whole.moments.second[i]) << i;
  }
  // Without the moments the continuation is a different run (fresh moments, bias correction at k = 1).
  const adam_result fresh = adam(f, first.theta, optim_testing::adam_settings(17));
  EXPECT_NE(fresh.theta[0], whole.theta[0]);
}

TEST(AdamResume, RefusesMomentsOfTheWrongSizeOrNotFinite) {
  const auto f = optim_testing::quadratic(optim_testing::random_spd(3, 1.0, 2), std::vector<double>(3, 1.0));
  adam_options options = optim_testing::adam_settings(5);
  options.initial = adam_moments{{0, 0}, {0, 0}, 4};
  EXPECT_THROW((void)adam(f, std::vector<double>(3, 0.0), options), flashsinkhorn::invalid_argument);
  options.initial = adam_moments{{0, 0, 0}, {0, -1, 0}, 4};
  try {
    (void)adam(f, std::vector<double>(3, 0.0), options);
    FAIL() << "negative second moment accepted";
  } catch (const flashsinkhorn::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("entry 1"), std::string::npos) << e.what();
  }
  options.initial = adam_moments{{}, {}, -1};
  EXPECT_THROW((void)adam(f, std::vector<double>(3, 0.0), options), flashsinkhorn::invalid_argument);
}

// The saddle of optim_test_functions (f = x² − y² + y⁴/4 from (0.5, 1e-3)): cut the Adam phase at 12
// steps (not a multiple of check_every, so no check is repeated) and continue; the switch comes at
// the same Adam step, the checks keep their schedule, and both end at the same minimum.
TEST(HybridResume, AContinuedRunSwitchesAtTheSameStepAndEndsAtTheSameMinimum) {
  hybrid_options options;
  options.adam.learning_rate = 0.05;
  options.adam.max_iterations = 500;
  options.check_every = 5;
  const std::vector<double> start{0.5, 1e-3};
  const hybrid_result whole = hybrid(optim_testing::saddle(), start, options);
  ASSERT_GT(whole.switch_iteration, 12);

  hybrid_options cut = options;
  cut.adam.max_iterations = 12;
  const hybrid_result first = hybrid(optim_testing::saddle(), start, cut);
  ASSERT_EQ(first.switch_iteration, -1);
  EXPECT_EQ(first.state.adam.steps, 12);
  EXPECT_EQ(first.state.checks, 3);  // at 0, 5 and 10 Adam steps
  EXPECT_EQ(first.state.ritz_vector.size(), 2u);

  hybrid_options more = options;
  more.resume = first.state;
  const hybrid_result second = hybrid(optim_testing::saddle(), first.theta, more);
  EXPECT_EQ(second.switch_iteration, whole.switch_iteration);
  ASSERT_FALSE(second.lambda_trace.empty());
  EXPECT_EQ(second.lambda_trace.front().iteration, 15);
  EXPECT_EQ(first.lambda_trace.size() + second.lambda_trace.size(), whole.lambda_trace.size());
  EXPECT_EQ(second.status, optimizer_status::converged);
  EXPECT_NEAR(second.theta[0], whole.theta[0], 1e-10);
  EXPECT_NEAR(second.theta[1], whole.theta[1], 1e-10);
  EXPECT_EQ(second.state.switch_iteration, whole.switch_iteration);
  EXPECT_GT(second.state.trust_radius, 0);
}

// After the switch: a run cut in its trust-region phase by the iteration cap continues from θ with
// the radius it had reached, without going back to Adam.
TEST(HybridResume, AfterTheSwitchItContinuesTheTrustRegion) {
  hybrid_options options = optim_testing::saddle_hybrid_options();
  options.trust_region.max_iterations = 1;
  const hybrid_result first = hybrid(optim_testing::saddle(), {0.5, 1e-3}, options);
  ASSERT_GE(first.switch_iteration, 0);
  ASSERT_EQ(first.status, optimizer_status::max_iterations);
  EXPECT_GT(first.state.trust_radius, 0);

  hybrid_options more = options;
  more.trust_region.max_iterations = 100;
  more.resume = first.state;
  const hybrid_result second = hybrid(optim_testing::saddle(), first.theta, more);
  EXPECT_EQ(second.switch_iteration, first.switch_iteration);
  EXPECT_TRUE(second.lambda_trace.empty());
  EXPECT_EQ(second.adam_phase.history.size(), 0u);
  EXPECT_EQ(second.status, optimizer_status::converged);
  ASSERT_FALSE(second.second_order_phase.history.empty());
  EXPECT_EQ(second.second_order_phase.history.front().trust_radius, first.state.trust_radius);
  EXPECT_NEAR(second.theta[1], std::sqrt(2.0), 1e-8);
}

TEST(HybridResume, RefusesAdamInitialMomentsAndAMisSizedRitzVector) {
  hybrid_options options;
  options.adam.initial = adam_moments{{0, 0}, {0, 0}, 3};
  EXPECT_THROW((void)hybrid(optim_testing::saddle(), {0.5, 1e-3}, options), flashsinkhorn::invalid_argument);
  hybrid_options other;
  other.resume.ritz_vector = {1, 0, 0};
  EXPECT_THROW((void)hybrid(optim_testing::saddle(), {0.5, 1e-3}, other), flashsinkhorn::invalid_argument);
}

}  // namespace
