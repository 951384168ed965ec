// 2^(t − reference) by a cubic on the FMA pipe, for the share of a GPU softmin's exponentials that
// leaves the MUFU (FlashAttention-4's trick; softmin_wgmma_kernel.cuh, reduce_score_tile_predicted).
//
// A predicted tile spends per score an FFMA (the score), an FADD (minus the reference), the MUFU's
// ex2 and an FADD (the sum): the MUFU (16 lanes a clock an SM against 128 FP32 lanes) bounds it. This
// evaluation takes 8 FP32/INT instructions instead of the FADD and the ex2, so one score in four here
// about balances the two: in the SASS of the tf32 loop, 827 issue slots against 768 MUFU clocks per
// 128 scores, where the MUFU alone held 1024 (docs/cuda_backend.md, "Next steps for the forward").
//
// With r = t − reference, kept in the window [kLow, kLow + kSpan] by a saturated FMA (NaN → kLow):
//   u = sat(t·k + o),  k = fl(1/kSpan),  o = (−kLow − reference)·k   (exp2_cubic_offset, one FFMA a row)
//   r = kSpan·u + kLow,  j = round(r) (the 1.5·2²³ magic: exact, r's integer part in v's low bits),
//   f = r − j ∈ [−½, ½],  2^f ≈ c0 + f(c1 + f(c2 + f·c3)),  2^r = 2^f with j added to its exponent.
// Window: j ∈ [−125, 128] keeps the exponent field in [1, 255] whatever 2^f's rounding (no wrap into
// the sign bit): below the window a term reads ≤ 2^−124.5 (negligible against the ≥ 2⁻⁶⁰ a usable
// row sum needs), at its top it reads ≥ 3.4·10³⁸ or ∞/NaN — above the guard's 3·10³⁸, as the MUFU's
// ∞ is, so a CTA whose prediction overflows still falls back (softmin_kernel.cuh,
// predicted_sum_usable). A NaN score reads 2^kLow here (the MUFU's scores of the same row keep a
// NaN visible; inputs are validated before any solve).
// Accuracy: c0..c3 minimise the relative error of 2^f on [−½, ½] (Remez): 7.5·10⁻⁵ (2^−13.7), below
// tf32's 2⁻¹¹ and bf16's 2⁻⁸ operand rounding; o's rounding adds ~|reference|·2⁻²⁴ (as t − reference
// does on the MUFU's path). tests/cpp/exp2_cubic_test.cpp holds the host evaluation, bit for bit the
// device's (the same FMAs, correctly rounded on both), to these bounds.
#pragma once

#include <cmath>
#include <cstdint>

#include "math/bit_cast.hpp"
#include "math/host_device.hpp"

namespace flashsinkhorn::math {

struct exp2_cubic_window {
  static constexpr float kLow = -125.f;   // r's lowest value: exponent field ≥ 1
  static constexpr float kSpan = 253.f;   // r's highest value kLow + kSpan = 128: field ≤ 255
  static constexpr float kStep = 1.f / kSpan;  // k (rounded; o is formed with the same k)
  static constexpr float kRoundMagic = 12582912.f + kLow;  // 1.5·2²³ + kLow: v = kSpan·u + this
  static constexpr float kC0 = 0.99992805719375610f;  // Remez, relative error on [−½, ½]
  static constexpr float kC1 = 0.69326096773147583f;
  static constexpr float kC2 = 0.24261112511157990f;
  static constexpr float kC3 = 0.05517166852951050f;
  // What callers may assume of a term 2^(t − reference) inside the window, relative: the cubic's
  // 7.5·10⁻⁵ and the rounding of u, k and o (tests/cpp/exp2_cubic_test.cpp holds it, plus o's
  // ~|reference|·2⁻²⁴, the size of t − reference's own rounding on the MUFU's path).
  static constexpr double kRelativeError = 1e-4;
};

// sat(a·b + c): one FFMA.SAT on the device (NaN → 0, as PTX's .sat), the same rounding on the host.
FS_HOST_DEVICE float saturated_fma(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
  float d;
  asm("fma.rn.sat.f32 %0, %1, %2, %3;" : "=f"(d) : "f"(a), "f"(b), "f"(c));
  return d;
#else
  const float d = fmaf(a, b, c);  // correctly rounded, as the FFMA
  return d > 0.f ? (d < 1.f ? d : 1.f) : 0.f;  // NaN fails d > 0: 0
#endif
}

FS_HOST_DEVICE std::uint32_t float_bits(float x) { return bit_cast<std::uint32_t>(x); }
FS_HOST_DEVICE float float_of_bits(std::uint32_t bits) { return bit_cast<float>(bits); }

// o of a row whose reference (log₂ units) is `reference`: u = t·k + o = (t − reference − kLow)·k.
// One FFMA (−reference·k exact, one rounding): o is within ulp(o)/2 of (−kLow − reference)·k.
FS_HOST_DEVICE float exp2_cubic_offset(float reference) {
  using w = exp2_cubic_window;
  return fmaf(-reference, w::kStep, -w::kLow * w::kStep);
}

// 2^(t − reference) for the row whose exp2_cubic_offset is `offset` (t in log₂ units).
FS_HOST_DEVICE float exp2_cubic(float t, float offset) {
  using w = exp2_cubic_window;
  const float u = saturated_fma(t, w::kStep, offset);      // (r − kLow)/kSpan in [0, 1]
  const float v = fmaf(u, w::kSpan, w::kRoundMagic);   // 1.5·2²³ + j: j = round(r)
  const float f = fmaf(u, w::kSpan, w::kRoundMagic - v);  // r − j (kRoundMagic − v = −round(kSpan·u), exact)
  const float p = fmaf(fmaf(fmaf(w::kC3, f, w::kC2), f, w::kC1), f, w::kC0);
  // v's bits are 0x4B400000 + j; shifted by the 23 mantissa bits only j << 23 (mod 2³²) is left.
  return float_of_bits(float_bits(p) + (float_bits(v) << 23));
}

}  // namespace flashsinkhorn::math
