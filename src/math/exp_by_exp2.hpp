// e^x in float64 arithmetic with the one transcendental step in single precision: the fp32 mode's
// float64 plan passes on narrow rows (plan_rows_launch.hpp, plan_pass_is_float64) under
// FLASHSINKHORN_FP32_PASS_EXP=ex2 (kernel_variant.hpp).
//
// Those passes are bound by the exponential: at d ≤ 16 a score costs d FMAs against one e^x, and
// float64's exp (libdevice: a reduction and a degree-11 polynomial, ~17 FP64 instructions in PTX)
// runs on the FP64 pipe, 64 lanes a clock an SM on an H100. Here
//   y = x·log₂e,  j = round(y) (the 1.5·2⁵² magic: j in the low word of y + magic),
//   f = y − j ∈ [−½, ½] (exact),  2^f by one single-precision 2^x (the MUFU's ex2.approx.ftz.f32 on
//   the device, std::exp2 on the host),  e^x = 2^f with j added to its float64 exponent,
// four FP64 instructions and two FP64 compares (the range), two conversions and one MUFU operation.
// Range: y < kLowestPower reads 0 (a weight below 2^−1021 against a row's reference term of 1:
// nothing a float64 sum keeps), y > kHighestPower reads +∞, x = −∞ reads 0, NaN reads NaN.
// Accuracy: relative kRelativeError — ex2.approx's 2^−22 and f's rounding to single precision (2^−25
// absolute, ln2·2^−25 relative): single-precision weights, computed from float64 scores, summed in
// float64. Deterministic: equal x give equal e^x, so two passes that form a score the same way
// apply one matrix; scores formed in two ways (the SIMT and the narrow pass) agree to float64
// rounding before the exponential and to ~2^−23 after it, where rounding f to single precision can
// land on either side of a float.
#pragma once

#include <cmath>
#include <cstdint>

#include "math/bit_cast.hpp"
#include "math/host_device.hpp"

namespace flashsinkhorn::math {

struct exp_by_exp2_range {
  static constexpr double kLowestPower = -1021.0;  // 2^f·2^j keeps a normal exponent above this j
  static constexpr double kHighestPower = 1023.0;
  static constexpr double kRelativeError = 4e-7;   // what callers may assume inside the range
};

// 2^f in single precision: the MUFU on the device (ex2.approx.ftz.f32: relative error ≤ 2^−22 on
// [−½, ½]), the correctly rounded std::exp2 on the host.
FS_HOST_DEVICE float single_exp2(float f) {
#if defined(__CUDA_ARCH__)
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(f));
  return y;
#else
  return std::exp2(f);
#endif
}

// e^x (header comment). Branch-free: the range is decided by selects on y.
FS_HOST_DEVICE double exp_by_exp2(double x) {
  constexpr double kLog2e = 1.4426950408889634;
  constexpr double kRoundMagic = 6755399441055744.0;  // 1.5·2⁵²: y + this rounds y to an integer
  const double y = x * kLog2e;
  const double shifted = y + kRoundMagic;
  const double j = shifted - kRoundMagic;
  const double two_f = static_cast<double>(single_exp2(static_cast<float>(y - j)));
  // j from the low word (two's complement), added to 2^f's exponent field in modular arithmetic.
  const auto power = static_cast<std::int32_t>(bit_cast<std::uint64_t>(shifted));
  const std::uint64_t exponent_step = static_cast<std::uint64_t>(static_cast<std::int64_t>(power)) << 52;
  const double scaled = bit_cast<double>(bit_cast<std::uint64_t>(two_f) + exponent_step);
  return y < exp_by_exp2_range::kLowestPower ? 0.0 : y <= exp_by_exp2_range::kHighestPower ? scaled : x * INFINITY;
}

// e^x as a float64 plan pass takes its weights: the math library's exp (libdevice's on the device),
// or exp_by_exp2 with kByEx2.
template <bool kByEx2>
FS_HOST_DEVICE double pass_exp(double x) {
  if constexpr (kByEx2) {
    return exp_by_exp2(x);
  } else {
    return std::exp(x);
  }
}

}  // namespace flashsinkhorn::math
