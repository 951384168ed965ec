// The cubic 2^(t − reference) of math/exp2_cubic.hpp (the GPU softmin's exponentials off the MUFU):
// its accuracy inside the window, and what it reads outside it — the facts the predicted-reference
// guard relies on (never negative, tiny below the window, above 3·10³⁸ or non-finite at its top).
// The host evaluation is the device's FMA for FMA, so these hold for the kernel's values too.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "math/exp2_cubic.hpp"

namespace {

namespace m = flashsinkhorn::math;

// References a softmin row can have (log₂ units): scores of ~10³ nats are common at small ε.
constexpr float kReferences[] = {0.f, 96.f, -300.25f, 1234.5f, -5000.f, 20000.f};

// The evaluation's relative error bound for a reference: the header's kRelativeError (the cubic's
// 7.5·10⁻⁵, the rounding of u and k) and the offset's rounding (|reference + 125|·2⁻²⁴ log₂ units, doubled).
double bound_for(float reference) {
  return m::exp2_cubic_window::kRelativeError + 2 * std::log(2.0) * (std::abs(reference) + 128) * std::ldexp(1.0, -24);
}

TEST(Exp2Cubic, WithinItsBoundInsideTheWindow) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> r_of(-124.0, 127.4);
  for (const float reference : kReferences) {
    const float offset = m::exp2_cubic_offset(reference);
    double worst = 0;
    for (int i = 0; i < 200000; ++i) {
      const double r = i < 25000 ? -124.0 + i * (251.4 / 25000) : r_of(rng);  // a grid, then random
      const float t = static_cast<float>(reference + r);
      const double exact = std::exp2(static_cast<double>(t) - reference);
      worst = std::max(worst, std::abs(m::exp2_cubic(t, offset) - exact) / exact);
    }
    EXPECT_LE(worst, bound_for(reference)) << "reference " << reference;
    EXPECT_GT(worst, 1e-5) << "the cubic's error should show: is the polynomial still the cubic?";
  }
}

TEST(Exp2Cubic, BelowTheWindowAPositiveNegligibleTerm) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  for (const float reference : kReferences) {
    const float offset = m::exp2_cubic_offset(reference);
    for (const double r : {-125.6, -126.0, -149.0, -200.0, -1e30}) {
      const float y = m::exp2_cubic(static_cast<float>(reference + r), offset);
      EXPECT_GT(y, 0.f) << reference << " " << r;
      EXPECT_LE(y, std::ldexp(1.f, -124)) << reference << " " << r;
    }
    for (const float t : {-kInf, std::numeric_limits<float>::quiet_NaN()}) {
      const float y = m::exp2_cubic(t, offset);
      EXPECT_GT(y, 0.f) << t;
      EXPECT_LE(y, std::ldexp(1.f, -124)) << t;
    }
  }
}

TEST(Exp2Cubic, AtTheTopOfTheWindowAboveTheGuardOrNotFinite) {
  constexpr float kGuardTop = 3e38f;  // softmin_kernel.cuh, predicted_sum_usable
  for (const float reference : kReferences) {
    const float offset = m::exp2_cubic_offset(reference);
    for (const double r : {128.0, 128.4, 129.0, 200.0, 1e30, double(std::numeric_limits<float>::infinity())}) {
      const float y = m::exp2_cubic(static_cast<float>(reference + r), offset);
      EXPECT_TRUE(!std::isfinite(y) || y > kGuardTop) << reference << " " << r << " read " << y;
      EXPECT_FALSE(y < 0.f) << reference << " " << r;
    }
  }
}

TEST(Exp2Cubic, NeverNegativeAndFiniteBelowTheTopForAnyFloat) {
  std::mt19937 rng(11);
  std::uniform_int_distribution<std::uint32_t> bits;
  for (const float reference : kReferences) {
    const float offset = m::exp2_cubic_offset(reference);
    for (int i = 0; i < 200000; ++i) {
      const float t = m::float_of_bits(bits(rng));
      const float y = m::exp2_cubic(t, offset);
      EXPECT_FALSE(y < 0.f) << t;
      if (static_cast<double>(t) - reference < 127.0) {  // NaN t compares false: below the window
        ASSERT_TRUE(std::isfinite(y)) << "t " << t << " reference " << reference;
        ASSERT_GT(y, 0.f) << "t " << t << " reference " << reference;
      }
    }
  }
}

// What the kernel does with it (softmin_wgmma_kernel.cuh, reduce_score_tile_predicted): a row's sum
// over keys with every fourth term by the cubic, against the same float scores all by exp2f, with a
// reference predicted a few log₂ units off and the margin of 96 below. Squared-Euclidean scores of
// N(0, I) clouds at ε = 0.1 (|t| up to ~2·10³ log₂ units at d = 64): the sums differ by no more than
// the per-term bound, so a half-step's potential moves by at most ε times it.
TEST(Exp2Cubic, ARowSumMovesByNoMoreThanTheTermBound) {
  std::mt19937_64 rng(1);
  std::normal_distribution<double> normal(0.0, 1.0);
  constexpr int kRows = 200, kKeys = 4000;
  constexpr double kEps = 0.1, kLog2e = 1.4426950408889634;
  for (const int d : {3, 8, 64}) {
    std::vector<double> y(static_cast<std::size_t>(kKeys) * d);
    for (double& v : y) v = normal(rng);
    double worst = 0;
    for (int i = 0; i < kRows; ++i) {
      std::vector<double> x(static_cast<std::size_t>(d));
      for (double& v : x) v = normal(rng);
      std::vector<float> t(kKeys);
      double top = -1e300;
      for (int j = 0; j < kKeys; ++j) {
        double cost = 0;
        for (int k = 0; k < d; ++k) cost += (x[k] - y[static_cast<std::size_t>(j) * d + k]) * (x[k] - y[static_cast<std::size_t>(j) * d + k]);
        t[j] = static_cast<float>(-cost / kEps * kLog2e);
        top = std::max(top, static_cast<double>(t[j]));
      }
      const float reference = static_cast<float>(top + std::log2(static_cast<double>(kKeys)) / 2 - 96 + 3 * normal(rng));
      const float offset = m::exp2_cubic_offset(reference);
      double split = 0, mufu = 0;
      for (int j = 0; j < kKeys; ++j) {
        const double exact = std::exp2(static_cast<double>(t[j]) - reference);
        mufu += exact;
        split += j % 4 == 3 ? static_cast<double>(m::exp2_cubic(t[j], offset)) : exact;
      }
      worst = std::max(worst, std::abs(split / mufu - 1));
      ASSERT_LE(std::abs(split / mufu - 1), bound_for(reference)) << "d " << d << " row " << i;
    }
    EXPECT_GT(worst, 1e-6) << "d " << d << ": the cubic's share should show";
  }
}

TEST(Exp2Cubic, SaturatedFmaClampsAndSendsNanToZero) {
  EXPECT_EQ(m::saturated_fma(2.f, 3.f, -5.5f), 0.5f);
  EXPECT_EQ(m::saturated_fma(2.f, 3.f, 1.f), 1.f);
  EXPECT_EQ(m::saturated_fma(-2.f, 3.f, 1.f), 0.f);
  EXPECT_EQ(m::saturated_fma(std::numeric_limits<float>::quiet_NaN(), 1.f, 0.f), 0.f);
}

}  // namespace
