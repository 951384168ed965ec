// Math facts about the shared host/device headers: fast_exp2 accuracy, the LSE monoid laws,
// operand rounding, and the ε schedule against GeomLoss's formula.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "core/epsilon_schedule.hpp"
#include "math/fast_exp.hpp"
#include "math/lse_state.hpp"
#include "math/round_operand.hpp"

namespace fs = flashsinkhorn;

TEST(FastExp2, WithinTwoUlpOfStdExp2OverTheNonPositiveRange) {
  double worst = 0;
  for (float x = -125.0f; x <= 0.0f; x += 0.000373f) {
    const double exact = std::exp2(static_cast<double>(x));
    worst = std::max(worst, std::abs(fs::math::fast_exp2_nonpositive(x) - exact) / exact);
  }
  EXPECT_LT(worst, 2 * 5.97e-8) << "max relative error " << worst;
}

TEST(FastExp2, DoubleWithinFourUlpOfStdExp2) {
  double worst = 0;
  for (double x = -1020.0; x <= 0.0; x += 0.0003731) {
    const double exact = std::exp2(x);
    worst = std::max(worst, std::abs(fs::math::fast_exp2_nonpositive(x) - exact) / exact);
  }
  EXPECT_LT(worst, 4 * 1.11e-16) << "max relative error " << worst;
}

TEST(FastExp2, ExactAtIntegersAndNegligibleBelowTheClamp) {
  EXPECT_EQ(fs::math::fast_exp2_nonpositive(0.0f), 1.0f);
  EXPECT_EQ(fs::math::fast_exp2_nonpositive(-3.0f), 0.125f);
  EXPECT_LE(fs::math::fast_exp2_nonpositive(-std::numeric_limits<float>::infinity()), 1.2e-38f);
  EXPECT_LE(fs::math::fast_exp2_nonpositive(-1000.0f), 1.2e-38f);
}

TEST(FastExp2, VectorLanesEqualTheScalarResult) {
  typedef float vec4 __attribute__((vector_size(16)));  // SSE width: the tests build without -march
  for (const vec4 x : {vec4{0.0f, -0.5f, -1.25f, -7.0f}, vec4{-30.3f, -99.9f, -126.0f, -0.001f}}) {
    const vec4 y = fs::math::fast_exp2_nonpositive(x);
    for (int lane = 0; lane < 4; ++lane) EXPECT_EQ(y[lane], fs::math::fast_exp2_nonpositive(x[lane])) << lane;
  }
}

TEST(LseState, IdentityIsNeutralAndEmptyStaysEmpty) {
  using state = fs::math::lse_state<double>;
  const state a{1.5, 2.0};
  const state left = fs::math::combine(state::identity(), a);
  EXPECT_DOUBLE_EQ(left.value(), a.value());
  const state both_empty = fs::math::combine(state::identity(), state::identity());
  EXPECT_EQ(both_empty.max, -std::numeric_limits<double>::infinity());
  EXPECT_EQ(both_empty.sum, 0.0);  // no NaN from exp(−∞ − −∞)
}

TEST(LseState, CombineIsAssociativeAndEqualsDirectLse) {
  std::mt19937_64 rng(7);
  std::normal_distribution<double> normal(0, 30);
  std::vector<double> terms(100);
  for (double& t : terms) t = normal(rng);
  using state = fs::math::lse_state<double>;
  state left = state::identity(), right = state::identity(), whole = state::identity();
  for (std::size_t k = 0; k < terms.size(); ++k) {
    (k < 37 ? left : right) = fs::math::combine(k < 37 ? left : right, state{terms[k], 1.0});
    whole = fs::math::combine(whole, state{terms[k], 1.0});
  }
  double m = *std::max_element(terms.begin(), terms.end()), s = 0;
  for (double t : terms) s += std::exp(t - m);
  EXPECT_NEAR(fs::math::combine(left, right).value(), m + std::log(s), 1e-12);
  EXPECT_NEAR(whole.value(), m + std::log(s), 1e-12);
}

TEST(RoundOperand, Tf32AndBf16KeepTheirMantissaAndRoundToNearestEven) {
  const float x = 1.0f + 3.0f * std::ldexp(1.0f, -12);  // 1 + 0.75·2^-10: nearest tf32 is 1 + 2^-10
  EXPECT_EQ(fs::math::round_to_tf32(x), 1.0f + std::ldexp(1.0f, -10));
  EXPECT_EQ(fs::math::round_to_tf32(1.0f + std::ldexp(1.0f, -11)), 1.0f);  // tie → even
  EXPECT_EQ(fs::math::round_to_bf16(1.0f + std::ldexp(1.0f, -8)), 1.0f);    // tie → even
  EXPECT_EQ(fs::math::round_to_bf16(3.0f), 3.0f);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1e4f, 1e4f);
  for (int k = 0; k < 10000; ++k) {
    const float v = u(rng);
    EXPECT_LE(std::abs(fs::math::round_to_tf32(v) - v), std::abs(v) * std::ldexp(1.0f, -11));
    EXPECT_LE(std::abs(fs::math::round_to_bf16(v) - v), std::abs(v) * std::ldexp(1.0f, -8));
  }
}

TEST(EpsilonSchedule, MatchesGeomLossFormula) {
  // GeomLoss: [diam²] + [exp(e) for e in arange(2 log diam, 2 log blur, 2 log scaling)] + [blur²].
  const double diam = 4.0, eps = 0.01, scaling = 0.5;
  const std::vector<double> s = fs::detail::epsilon_schedule(diam, eps, scaling);
  // arange(log 16, log 0.01, log 0.25) = log 16 − k·log 4 for k = 0..5 (16 → 0.015625 > 0.01).
  ASSERT_EQ(s.size(), 1u + 6u + 1u);
  EXPECT_DOUBLE_EQ(s[0], 16.0);
  EXPECT_NEAR(s[1], 16.0, 1e-12);
  EXPECT_NEAR(s[6], 16.0 / 1024.0, 1e-12);
  EXPECT_DOUBLE_EQ(s.back(), eps);
}

TEST(EpsilonSchedule, SmallDiameterHasNoMiddleTerms) {
  const std::vector<double> s = fs::detail::epsilon_schedule(0.05, 0.01, 0.5);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_NEAR(s[0], 0.0025, 1e-15);
  EXPECT_NEAR(s[1], 0.01, 1e-17);  // blur² = (√ε)², as GeomLoss
}
