// The hybrid's gradient gate (hybrid_options::check_gradient_norm): λ_min checks only where ‖∇f‖ is
// at most the gate, Adam alone step for step until the first one.
#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <limits>
#include <vector>

#include "flashsinkhorn/error.hpp"
#include "optim_test_functions.hpp"

namespace {

using flashsinkhorn::optim::adam;
using flashsinkhorn::optim::adam_result;
using flashsinkhorn::optim::hybrid;
using flashsinkhorn::optim::hybrid_options;
using flashsinkhorn::optim::hybrid_result;
using flashsinkhorn::optim::optimizer_status;

constexpr double kGate = 0.7;  // on the saddle: checks at Adam steps 4 and 24 (ungated: 0, 5, …, 20)
constexpr int kCheckEvery = 5;
const std::vector<double> kStart{0.5, 1e-3};  // the saddle's start (optim_test_functions)

hybrid_options gated(double gate = kGate) {
  hybrid_options options;
  options.adam = optim_testing::adam_settings(500);
  options.check_every = kCheckEvery;
  options.check_gradient_norm = gate;
  return options;
}

// ‖∇f(θ_k)‖ along Adam alone for k = 0 … steps (θ_0's by the objective, the rest from the history).
std::vector<double> adam_gradient_norms(int steps) {
  std::vector<double> gradient(kStart.size());
  (void)optim_testing::saddle().gradient(kStart, gradient);
  std::vector<double> norms{std::hypot(gradient[0], gradient[1])};
  const adam_result run = adam(optim_testing::saddle(), kStart, optim_testing::adam_settings(steps));
  for (const auto& step : run.history) norms.push_back(step.gradient_norm);
  return norms;
}

int first_step_inside(const std::vector<double>& norms, double gate) {
  for (std::size_t k = 0; k < norms.size(); ++k)
    if (norms[k] <= gate) return static_cast<int>(k);
  return -1;
}

// Checks fall only inside the gate and at least check_every steps apart, the first at the first step
// inside it; until then the hybrid's iterates are Adam alone's, bit for bit; the run still switches
// and converges to the minimum (0, √2).
TEST(HybridGate, ChecksOnlyInsideTheGateAndIsAdamAloneUntilTheFirst) {
  const std::vector<double> norms = adam_gradient_norms(60);
  const int first = first_step_inside(norms, kGate);
  ASSERT_GT(first, 1) << "the gate must keep θ_0's check off for this test to say anything";

  const hybrid_result r = hybrid(optim_testing::saddle(), kStart, gated());
  ASSERT_GE(r.lambda_trace.size(), 2u);
  EXPECT_EQ(r.lambda_trace.front().iteration, first);
  EXPECT_GT(r.lambda_trace[1].iteration - r.lambda_trace[0].iteration, kCheckEvery);  // due checks skipped outside
  for (std::size_t i = 1; i < r.lambda_trace.size(); ++i)
    EXPECT_GE(r.lambda_trace[i].iteration - r.lambda_trace[i - 1].iteration, kCheckEvery);
  for (const auto& sample : r.lambda_trace) {
    const int k = sample.iteration;
    const double norm = k == 0 ? norms[0] : r.adam_phase.history[static_cast<std::size_t>(k - 1)].gradient_norm;
    EXPECT_LE(norm, kGate) << "a check at Adam step " << k;
  }
  const adam_result alone = adam(optim_testing::saddle(), kStart, optim_testing::adam_settings(first));
  ASSERT_GE(r.adam_phase.history.size(), static_cast<std::size_t>(first));
  for (std::size_t k = 0; k < static_cast<std::size_t>(first); ++k)
    EXPECT_EQ(r.adam_phase.history[k].value, alone.history[k].value);

  EXPECT_GE(r.switch_iteration, first);
  EXPECT_EQ(r.status, optimizer_status::converged);
  EXPECT_NEAR(r.theta[1], std::sqrt(2.0), 1e-8);

  const hybrid_result ungated = hybrid(optim_testing::saddle(), kStart, gated(std::numeric_limits<double>::infinity()));
  EXPECT_EQ(ungated.lambda_trace.front().iteration, 0);
  EXPECT_LT(r.evaluations.hvps, ungated.evaluations.hvps);
  std::cout << "[ hybrid gate ] ‖∇f‖ ≤ " << kGate << ": first check at Adam step " << first << ", "
            << r.lambda_trace.size() << " checks, " << r.evaluations.hvps << " Hessian products (ungated: "
            << ungated.lambda_trace.size() << " checks, " << ungated.evaluations.hvps << " products); switch at "
            << r.switch_iteration << " (ungated " << ungated.switch_iteration << ")\n";
}

// A gated hybrid continued from an Adam-alone run that never met the gate (HybridState.after_adam in
// Python: Adam's moments, no check made) is the uninterrupted gated hybrid: the same checks, switch
// and end point.
TEST(HybridGate, ContinuesAnAdamRunThatNeverMetTheGate) {
  const std::vector<double> norms = adam_gradient_norms(60);
  const int first = first_step_inside(norms, kGate);
  ASSERT_GT(first, 1);
  const hybrid_result whole = hybrid(optim_testing::saddle(), kStart, gated());

  const adam_result alone = adam(optim_testing::saddle(), kStart, optim_testing::adam_settings(first - 1));
  hybrid_options more = gated();
  more.resume.adam = alone.moments;
  const hybrid_result continued = hybrid(optim_testing::saddle(), alone.theta, more);
  ASSERT_EQ(continued.lambda_trace.size(), whole.lambda_trace.size());
  for (std::size_t i = 0; i < whole.lambda_trace.size(); ++i) {
    EXPECT_EQ(continued.lambda_trace[i].iteration, whole.lambda_trace[i].iteration);
    EXPECT_DOUBLE_EQ(continued.lambda_trace[i].lambda_min, whole.lambda_trace[i].lambda_min);
  }
  EXPECT_EQ(continued.switch_iteration, whole.switch_iteration);
  EXPECT_EQ(continued.status, optimizer_status::converged);
  EXPECT_NEAR(continued.theta[0], whole.theta[0], 1e-10);
  EXPECT_NEAR(continued.theta[1], whole.theta[1], 1e-10);
  EXPECT_EQ(continued.state.last_check, whole.state.last_check);
}

// check_at_start: one more check at θ_0, outside the gate (the saddle's λ_min < 0 on record, certified
// early), then the gated schedule from there — the next check check_every steps on inside the gate —
// and the gated run's switch and end point.
TEST(HybridGate, CheckAtStartRecordsTheStartingCurvature) {
  const std::vector<double> norms = adam_gradient_norms(60);
  ASSERT_GT(norms[0], kGate);  // θ_0 is outside the gate
  const hybrid_result plain = hybrid(optim_testing::saddle(), kStart, gated());
  hybrid_options options = gated();
  options.check_at_start = true;
  const hybrid_result r = hybrid(optim_testing::saddle(), kStart, options);
  ASSERT_GE(r.lambda_trace.size(), 2u);
  EXPECT_EQ(r.lambda_trace[0].iteration, 0);
  EXPECT_TRUE(r.lambda_trace[0].certified_negative);
  EXPECT_LT(r.lambda_trace[0].lambda_min, 0);
  EXPECT_LE(r.lambda_trace[0].lanczos_steps, 2);  // p = 2: Lanczos is exact after two products
  int next = kCheckEvery;  // the first step check_every on inside the gate
  while (norms[static_cast<std::size_t>(next)] > kGate) ++next;
  EXPECT_EQ(r.lambda_trace[1].iteration, next);
  EXPECT_EQ(r.switch_iteration, plain.switch_iteration);
  EXPECT_EQ(r.status, optimizer_status::converged);
  EXPECT_NEAR(r.theta[1], plain.theta[1], 1e-10);
}

TEST(HybridGate, RefusesANonPositiveGateAndALastCheckAfterTheSteps) {
  for (const double gate : {0.0, -1.0, std::nan("")}) {
    EXPECT_THROW((void)hybrid(optim_testing::saddle(), kStart, gated(gate)), flashsinkhorn::invalid_argument)
        << gate;
  }
  hybrid_options options = gated();
  options.resume.adam = {{0, 0}, {0, 0}, 3};
  options.resume.last_check = 4;
  try {
    (void)hybrid(optim_testing::saddle(), kStart, options);
    FAIL() << "a last check after the resumed Adam steps was accepted";
  } catch (const flashsinkhorn::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("resume.last_check"), std::string::npos) << e.what();
  }
}

}  // namespace
