// Unusable options and callbacks of the optimisers throw flashsinkhorn::invalid_argument naming the
// field and the value.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>

#include "flashsinkhorn/error.hpp"
#include "optim_test_functions.hpp"

namespace {

using namespace flashsinkhorn::optim;  // NOLINT(google-build-using-namespace): the whole optim API is under test

void expect_invalid(const std::function<void()>& call, const std::string& expected) {
  try {
    call();
    ADD_FAILURE() << "no exception; expected one mentioning \"" << expected << "\"";
  } catch (const flashsinkhorn::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << "message: " << e.what();
  }
}

const std::vector<double> kStart{0.5, 0.5};

TEST(OptimValidation, NewtonCgOptions) {
  const objective f = optim_testing::saddle();
  auto with = [&](auto change) {
    return [&f, change] {
      newton_cg_options o;
      change(o);
      (void)newton_cg(f, kStart, o);
    };
  };
  expect_invalid(with([](auto& o) { o.gradient_tolerance = 0; }), "newton_cg_options.gradient_tolerance must be a positive finite number, got 0");
  expect_invalid(with([](auto& o) { o.gradient_tolerance = std::nan(""); }), "newton_cg_options.gradient_tolerance");
  expect_invalid(with([](auto& o) { o.max_iterations = 0; }), "newton_cg_options.max_iterations must be at least 1");
  expect_invalid(with([](auto& o) { o.max_cg_iterations = -3; }), "newton_cg_options.max_cg_iterations");
  expect_invalid(with([](auto& o) { o.forcing.initial = 1; }), "newton_cg_options.forcing.initial must be in (0, 1)");
  expect_invalid(with([](auto& o) { o.forcing.maximum = 0; }), "newton_cg_options.forcing.maximum");
  expect_invalid(with([](auto& o) { o.forcing.gamma = 1.5; }), "newton_cg_options.forcing.gamma");
  expect_invalid(with([](auto& o) { o.forcing.exponent = 1; }), "newton_cg_options.forcing.exponent");
  expect_invalid(with([](auto& o) { o.armijo_c1 = 1; }), "newton_cg_options.armijo_c1");
  expect_invalid(with([](auto& o) { o.backtrack_factor = 0; }), "newton_cg_options.backtrack_factor");
  expect_invalid(with([](auto& o) { o.max_backtracks = 0; }), "newton_cg_options.max_backtracks");
}

TEST(OptimValidation, TrustRegionOptions) {
  const objective f = optim_testing::saddle();
  auto with = [&](auto change) {
    return [&f, change] {
      trust_region_options o;
      change(o);
      (void)trust_region(f, kStart, o);
    };
  };
  expect_invalid(with([](auto& o) { o.initial_radius = -1; }), "trust_region_options.initial_radius must be a positive finite number, got -1");
  expect_invalid(with([](auto& o) { o.initial_radius = 1e4; }), "trust_region_options.initial_radius must be ≤ max_radius");
  expect_invalid(with([](auto& o) { o.max_radius = 0; }), "trust_region_options.max_radius");
  expect_invalid(with([](auto& o) { o.min_radius = 0; }), "trust_region_options.min_radius must be a positive");
  expect_invalid(with([](auto& o) { o.min_radius = 2; }), "trust_region_options.min_radius must be < initial_radius");
  expect_invalid(with([](auto& o) { o.gradient_tolerance = -1e-9; }), "trust_region_options.gradient_tolerance");
  expect_invalid(with([](auto& o) { o.acceptance_ratio = 0.3; }), "trust_region_options.acceptance_ratio must be in [0, 0.25)");
  expect_invalid(with([](auto& o) { o.shrink_below = 0.8; }), "trust_region_options.shrink_below");
  expect_invalid(with([](auto& o) { o.expand_above = 1; }), "trust_region_options.expand_above");
  expect_invalid(with([](auto& o) { o.shrink_factor = 1; }), "trust_region_options.shrink_factor");
  expect_invalid(with([](auto& o) { o.expand_factor = 1; }), "trust_region_options.expand_factor");
  expect_invalid(with([](auto& o) { o.forcing.initial = 0; }), "trust_region_options.forcing.initial");
}

TEST(OptimValidation, AdamAndHybridOptions) {
  const objective f = optim_testing::saddle();
  auto adam_with = [&](auto change) {
    return [&f, change] {
      adam_options o;
      change(o);
      (void)adam(f, kStart, o);
    };
  };
  expect_invalid(adam_with([](auto& o) { o.learning_rate = 0; }), "adam_options.learning_rate");
  expect_invalid(adam_with([](auto& o) { o.beta1 = 1; }), "adam_options.beta1 must be in [0, 1)");
  expect_invalid(adam_with([](auto& o) { o.beta2 = -0.1; }), "adam_options.beta2");
  expect_invalid(adam_with([](auto& o) { o.epsilon = 0; }), "adam_options.epsilon");
  auto hybrid_with = [&](auto change) {
    return [&f, change] {
      hybrid_options o;
      change(o);
      (void)hybrid(f, kStart, o);
    };
  };
  expect_invalid(adam_with([](auto& o) { o.max_seconds = 0; }), "adam_options.max_seconds must be > 0 seconds");
  expect_invalid(adam_with([](auto& o) { o.max_seconds = std::nan(""); }), "adam_options.max_seconds");
  expect_invalid(hybrid_with([](auto& o) { o.max_seconds = -1; }), "hybrid_options.max_seconds");
  expect_invalid(hybrid_with([](auto& o) { o.trust_region.max_seconds = 0; }), "trust_region_options.max_seconds");
  expect_invalid(hybrid_with([](auto& o) { o.check_every = 0; }), "hybrid_options.check_every");
  expect_invalid(hybrid_with([](auto& o) { o.negative_tolerance = 0; }), "hybrid_options.negative_tolerance");
  expect_invalid(hybrid_with([](auto& o) { o.switch_threshold = -1; }), "hybrid_options.switch_threshold");
  expect_invalid(hybrid_with([](auto& o) { o.lanczos.tolerance = 0; }), "hybrid_options.lanczos.tolerance");
  expect_invalid(hybrid_with([](auto& o) { o.adam.max_iterations = 0; }), "adam_options.max_iterations");
  expect_invalid(hybrid_with([](auto& o) { o.trust_region.initial_radius = 0; }), "trust_region_options.initial_radius");
  expect_invalid(hybrid_with([](auto& o) {
                   o.second_order = second_order_method::newton_cg;
                   o.newton_cg.armijo_c1 = 0;
                 }),
                 "newton_cg_options.armijo_c1");
}

TEST(OptimValidation, LanczosOptions) {
  const symmetric_operator identity = [](const_span x, mutable_span y) { std::copy(x.begin(), x.end(), y.begin()); };
  auto with = [&](int dimension, auto change) {
    return [&identity, dimension, change] {
      lanczos_options o;
      change(o);
      (void)lanczos_extremes(identity, dimension, o);
    };
  };
  const auto no_change = [](auto&) {};
  expect_invalid(with(0, no_change), "the dimension p of the operator must be at least 1, got 0");
  expect_invalid(with(3, [](auto& o) { o.tolerance = 0; }), "lanczos_options.tolerance must be a positive finite number, got 0");
  expect_invalid(with(3, [](auto& o) { o.max_steps = 0; }), "lanczos_options.max_steps");
  expect_invalid(with(3, [](auto& o) { o.start = {1, 2}; }), "lanczos_options.start must be empty or of size p = 3, got size 2");
  expect_invalid(with(3, [](auto& o) { o.start = {0, 0, 0}; }), "lanczos_options.start must be finite and not all zero");
  expect_invalid(with(3, [](auto& o) { o.stop_below = std::nan(""); }), "lanczos_options.stop_below");
  expect_invalid([] { (void)lanczos_extremes(symmetric_operator{}, 3, {}); }, "the operator is empty");
}

TEST(OptimValidation, CallbacksAndStartingPoint) {
  objective no_hvp = optim_testing::saddle();
  no_hvp.hvp = nullptr;
  expect_invalid([&] { (void)newton_cg(no_hvp, kStart); }, "newton_cg needs objective.hvp");
  expect_invalid([&] { (void)trust_region(no_hvp, kStart); }, "trust_region needs objective.hvp");
  expect_invalid([&] { (void)hybrid(no_hvp, kStart); }, "hybrid needs objective.hvp");
  EXPECT_NO_THROW((void)adam(no_hvp, kStart));  // Adam needs no Hessian
  expect_invalid([&] { (void)hessian_at(no_hvp, kStart); }, "hessian_at needs objective.hvp");

  objective no_gradient = optim_testing::saddle();
  no_gradient.gradient = nullptr;
  expect_invalid([&] { (void)adam(no_gradient, kStart); }, "adam needs objective.gradient");
  expect_invalid([&] { (void)newton_cg(optim_testing::saddle(), {}); }, "newton_cg: theta0 is empty");

  objective not_finite = optim_testing::saddle();
  not_finite.gradient = [](const_span, mutable_span g) {
    g[0] = g[1] = 0;
    return std::numeric_limits<double>::infinity();
  };
  expect_invalid([&] { (void)trust_region(not_finite, kStart); }, "trust_region: f(theta0) = inf");

  expect_invalid([] { (void)linear_map_objective(optim_testing::saddle(), {1, 2, 3}, 2, 2, 1); },
                 "linear_map_objective: x has 3 values; an n × d_in design needs 4");
}

}  // namespace
