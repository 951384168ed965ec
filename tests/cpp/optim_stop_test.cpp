// A callback that throws stop_requested (objective.hpp) ends a run at its last accepted iterate with
// status stopped and the state of that iterate: resumed, the run goes on as if never interrupted.
#include <gtest/gtest.h>

#include <cstddef>
#include <memory>
#include <vector>

#include "optim_test_functions.hpp"

namespace {

using flashsinkhorn::optim::adam;
using flashsinkhorn::optim::adam_options;
using flashsinkhorn::optim::adam_result;
using flashsinkhorn::optim::hybrid;
using flashsinkhorn::optim::hybrid_options;
using flashsinkhorn::optim::hybrid_result;
using flashsinkhorn::optim::objective;
using flashsinkhorn::optim::optimizer_result;
using flashsinkhorn::optim::optimizer_status;
using flashsinkhorn::optim::stop_requested;
using flashsinkhorn::optim::trust_region;
using flashsinkhorn::optim::trust_region_options;

// `f` whose gradient call number `stop_gradient` (1-based) or Hessian product number `stop_hvp`
// throws stop_requested instead of answering (0: never).
objective stopping(objective f, int stop_gradient, int stop_hvp = 0) {
  auto gradients = std::make_shared<int>(0);
  auto hvps = std::make_shared<int>(0);
  objective out = f;
  out.gradient = [f, gradients, stop_gradient](auto theta, auto g) {
    if (++*gradients == stop_gradient) throw stop_requested("budget");
    return f.gradient(theta, g);
  };
  if (f.hvp) {
    out.hvp = [f, hvps, stop_hvp](auto theta, auto v, auto product) {
      if (++*hvps == stop_hvp) throw stop_requested("budget");
      f.hvp(theta, v, product);
    };
  }
  return out;
}

void expect_same_theta(const std::vector<double>& a, const std::vector<double>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i], b[i]) << i;
}

// Stopped during its 10th gradient call (step 9): the result is the run of 8 steps, bit for bit, and
// continued from its moments it ends where the uninterrupted 30 steps end.
TEST(AdamStop, EndsAtTheLastCompletedStepAndResumesExactly) {
  const auto f = optim_testing::quadratic(optim_testing::random_spd(6, 0.5, 11), std::vector<double>(6, 1.0));
  const std::vector<double> start(6, 0.3);
  const adam_result whole = adam(f, start, optim_testing::adam_settings(30));
  const adam_result eight = adam(f, start, optim_testing::adam_settings(8));

  const adam_result stopped = adam(stopping(f, 10), start, optim_testing::adam_settings(30));
  EXPECT_EQ(stopped.status, optimizer_status::stopped);
  EXPECT_EQ(stopped.iterations, 8);
  EXPECT_EQ(stopped.history.size(), 8u);
  EXPECT_EQ(stopped.moments.steps, 8);
  EXPECT_EQ(stopped.value, eight.value);
  expect_same_theta(stopped.theta, eight.theta);
  expect_same_theta(stopped.moments.first, eight.moments.first);
  expect_same_theta(stopped.moments.second, eight.moments.second);

  adam_options more = optim_testing::adam_settings(30);
  more.initial = stopped.moments;
  const adam_result rest = adam(f, stopped.theta, more);
  EXPECT_EQ(rest.iterations, 30);
  expect_same_theta(rest.theta, whole.theta);
}

// Nothing to return before the first evaluation completes: the stop passes through.
TEST(AdamStop, AStopAtTheStartPassesThrough) {
  const auto f = optim_testing::quadratic(optim_testing::random_spd(3, 1.0, 2), std::vector<double>(3, 1.0));
  EXPECT_THROW((void)adam(stopping(f, 1), std::vector<double>(3, 0.2), optim_testing::adam_settings(5)), stop_requested);
}

hybrid_options saddle_settings() {
  hybrid_options options;
  options.adam.learning_rate = 0.05;
  options.adam.max_iterations = 500;
  options.check_every = 5;
  return options;
}

// The saddle of optim_test_functions. A stop inside the λ_min check at Adam step 10 drops that check
// (the continuation makes it); a stop in Adam step 11, after that step's check at 10 was made, undoes
// the step and the continuation does not check again. Either way the continued run switches at the
// same step, has the same λ_min trace and ends at the same minimum as the uninterrupted run.
TEST(HybridStop, ADroppedCheckOrStepIsMadeOnceByTheContinuation) {
  const std::vector<double> start{0.5, 1e-3};
  const hybrid_result whole = hybrid(optim_testing::saddle(), start, saddle_settings());
  ASSERT_GT(whole.switch_iteration, 12);
  ASSERT_GE(whole.lambda_trace.size(), 4u);
  int hvps_before_check_10 = 0;  // Lanczos products of the checks at 0 and 5
  for (std::size_t i = 0; i < 2; ++i) hvps_before_check_10 += whole.lambda_trace[i].lanczos_steps;

  struct cut { int gradient, hvp, steps, checks; };
  // gradient calls: 1 at θ₀, then one per Adam step: call 12 is step 11's
  for (const cut c : {cut{0, hvps_before_check_10 + 1, 10, 2}, cut{12, 0, 10, 3}}) {
    const hybrid_result stopped = hybrid(stopping(optim_testing::saddle(), c.gradient, c.hvp), start, saddle_settings());
    EXPECT_EQ(stopped.status, optimizer_status::stopped);
    EXPECT_EQ(stopped.state.adam.steps, c.steps);
    EXPECT_EQ(stopped.state.checks, c.checks);
    EXPECT_EQ(stopped.lambda_trace.size(), static_cast<std::size_t>(c.checks));

    hybrid_options more = saddle_settings();
    more.resume = stopped.state;
    const hybrid_result rest = hybrid(optim_testing::saddle(), stopped.theta, more);
    EXPECT_EQ(rest.switch_iteration, whole.switch_iteration);
    EXPECT_EQ(stopped.lambda_trace.size() + rest.lambda_trace.size(), whole.lambda_trace.size());
    ASSERT_FALSE(rest.lambda_trace.empty());
    EXPECT_EQ(rest.lambda_trace.front().iteration, c.checks == 2 ? 10 : 15);
    EXPECT_EQ(rest.status, optimizer_status::converged);
    EXPECT_NEAR(rest.theta[0], whole.theta[0], 1e-10);
    EXPECT_NEAR(rest.theta[1], whole.theta[1], 1e-10);
  }
}

// A stop in the second-order method's first evaluation (gradient call S + 2 after S Adam steps: θ₀'s,
// one per step, then the method's start) is no longer the hybrid's first evaluation: the run returns
// stopped, switched, at the switch point, and its continuation runs the method from there to the
// uninterrupted run's minimum.
TEST(HybridStop, AStopAtTheSecondOrderStartKeepsTheSwitch) {
  const std::vector<double> start{0.5, 1e-3};
  const hybrid_result whole = hybrid(optim_testing::saddle(), start, saddle_settings());
  const int s = whole.switch_iteration;
  ASSERT_GT(s, 0);
  const hybrid_result stopped = hybrid(stopping(optim_testing::saddle(), s + 2), start, saddle_settings());
  EXPECT_EQ(stopped.status, optimizer_status::stopped);
  EXPECT_EQ(stopped.switch_iteration, s);
  EXPECT_EQ(stopped.state.switch_iteration, s);
  EXPECT_EQ(stopped.state.trust_radius, 0.0);
  EXPECT_EQ(stopped.second_order_phase.iterations, 0);
  expect_same_theta(stopped.theta, whole.adam_phase.theta);
  EXPECT_EQ(stopped.lambda_trace.size(), whole.lambda_trace.size());

  hybrid_options more = saddle_settings();
  more.resume = stopped.state;
  const hybrid_result rest = hybrid(optim_testing::saddle(), stopped.theta, more);
  EXPECT_EQ(rest.switch_iteration, s);
  EXPECT_TRUE(rest.lambda_trace.empty());
  EXPECT_EQ(rest.status, optimizer_status::converged);
  EXPECT_NEAR(rest.theta[0], whole.theta[0], 1e-10);
  EXPECT_NEAR(rest.theta[1], whole.theta[1], 1e-10);
}

// Trust region on the extended Rosenbrock function, stopped during the trial evaluation of its 4th
// iteration: the result is the run of 3 iterations, with the radius its 4th iteration had.
TEST(TrustRegionStop, EndsAtTheLastAcceptedIterateWithItsRadius) {
  const objective f = optim_testing::extended_rosenbrock();
  const std::vector<double> start = optim_testing::rosenbrock_start(4);
  trust_region_options options;
  options.max_iterations = 3;
  const optimizer_result three = trust_region(f, start, options);
  options.max_iterations = 100;
  const optimizer_result whole = trust_region(f, start, options);
  ASSERT_GT(whole.history.size(), 4u);
  // Without a value callback trial points go through gradient: call 1 is θ₀'s, then one per trial.
  const optimizer_result stopped = trust_region(stopping(f, 5), start, options);
  EXPECT_EQ(stopped.status, optimizer_status::stopped);
  EXPECT_EQ(stopped.iterations, 3);
  EXPECT_EQ(stopped.history.size(), 3u);
  expect_same_theta(stopped.theta, three.theta);
  EXPECT_EQ(stopped.trust_radius, whole.history[3].trust_radius);
}

}  // namespace
