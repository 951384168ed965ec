// math::exp_by_exp2 (e^x in float64 with 2^f in single precision; the fp32 mode's float64 plan passes
// under FLASHSINKHORN_FP32_PASS_EXP=ex2): its accuracy against std::exp over the range a plan pass
// meets, the edges of the range, and the special values. The host evaluation takes std::exp2 for
// 2^f where the device takes the MUFU's ex2.approx; tests/gpu/exp_by_exp2_gpu_test.cu holds the two
// together.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "math/exp_by_exp2.hpp"

namespace {

namespace m = flashsinkhorn::math;
using range = m::exp_by_exp2_range;

// The host's part of the bound: f rounded to single precision (ln2·2⁻²⁵ relative) and std::exp2's
// correctly rounded float (2⁻²⁴); the device adds ex2.approx's 2⁻²², inside kRelativeError.
constexpr double kHostBound = 1.5e-7;

TEST(ExpByExp2, WithinItsBoundOverTheRange) {
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> x_of(-706.0, 709.0);  // 2^y ∈ (2^−1018.5, 2^1022.9)
  double worst = 0;
  for (int i = 0; i < 400000; ++i) {
    const double x = i < 100000 ? -706.0 + i * (1415.0 / 100000) : x_of(rng);  // a grid, then random
    const double exact = std::exp(x);
    worst = std::max(worst, std::abs(m::exp_by_exp2(x) - exact) / exact);
  }
  EXPECT_LE(worst, kHostBound);
  EXPECT_GT(worst, 1e-9) << "single-precision 2^f: an error of float64 size would mean the wrong function ran";
}

TEST(ExpByExp2, SmallArgumentsAsAPlanPassMeetsThem) {
  // Scores minus their row's reference: mostly in [−50, 0], where the weights that matter lie.
  double worst = 0;
  for (int i = 0; i <= 200000; ++i) {
    const double x = -50.0 + i * (50.0 / 200000);
    worst = std::max(worst, std::abs(m::exp_by_exp2(x) - std::exp(x)) / std::exp(x));
  }
  EXPECT_LE(worst, kHostBound);
  EXPECT_EQ(m::exp_by_exp2(0.0), 1.0) << "a row's reference term";
}

TEST(ExpByExp2, EdgesOfTheRangeAndSpecialValues) {
  const double inf = std::numeric_limits<double>::infinity();
  const double ln2 = std::log(2.0);
  EXPECT_EQ(m::exp_by_exp2(-inf), 0.0);
  EXPECT_EQ(m::exp_by_exp2((range::kLowestPower - 0.5) * ln2), 0.0) << "below the range";
  EXPECT_EQ(m::exp_by_exp2(-1e300), 0.0);
  const double lowest = m::exp_by_exp2((range::kLowestPower + 0.25) * ln2);
  EXPECT_TRUE(std::isnormal(lowest)) << lowest;
  EXPECT_NEAR(lowest / std::ldexp(std::exp2(0.25), -1021), 1.0, kHostBound);
  const double highest = m::exp_by_exp2((range::kHighestPower - 0.25) * ln2);
  EXPECT_TRUE(std::isfinite(highest));
  EXPECT_NEAR(highest / std::ldexp(std::exp2(0.75), 1022), 1.0, kHostBound);
  EXPECT_EQ(m::exp_by_exp2((range::kHighestPower + 1.5) * ln2), inf) << "above the range";
  EXPECT_EQ(m::exp_by_exp2(1e300), inf);
  EXPECT_EQ(m::exp_by_exp2(inf), inf);
  EXPECT_TRUE(std::isnan(m::exp_by_exp2(std::numeric_limits<double>::quiet_NaN())));
}

TEST(ExpByExp2, IncreasingOnAFineGrid) {
  // Across the integer steps of y, where j moves and f jumps from ½ to −½.
  double previous = 0;
  for (int i = 0; i <= 20000; ++i) {
    const double x = -10.0 + i * (20.0 / 20000);
    const double e = m::exp_by_exp2(x);
    EXPECT_GE(e, previous) << "x = " << x;
    previous = e;
  }
}

}  // namespace
