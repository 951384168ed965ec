// exp(x) for float on the FMA pipe: branch-free, so loops over it vectorise (CPU SIMD) and it can
// offload the MUFU unit on GPUs (FlashAttention-4's trick).
//
// exp(x) = 2^k · exp(r),  k = round(x·log2 e),  r = x − k·ln 2 ∈ [−ln2/2, ln2/2]  (Cody–Waite,
// ln 2 split in two so r is exact to float rounding), exp(r) by its degree-6 Taylor polynomial
// (truncation error < r⁷/7! ≤ 1.4e-9, below float's 6e-8 unit roundoff). 2^k is built in the exponent
// bits. Inputs below −87.3 return 0 (the subnormal range is flushed); inputs above 88.7 return +∞.
// Measured max relative error against std::exp over [−87, 88]: 2.4e-7 ≈ 4 ulp (tests/cpp/math_test.cpp),
// dominated by the float rounding of r and of the Horner steps.
//
// F is float, or (host only) a GCC/Clang vector of floats — the same code, lane-wise.
#pragma once

#include <bit>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "math/host_device.hpp"

namespace flashsinkhorn::math {

template <class F>
FS_HOST_DEVICE F fast_exp(F x) {
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kLn2Hi = 0.693359375f;      // exact in float, 9 significant bits
  constexpr float kLn2Lo = -2.12194440e-4f;   // ln 2 − kLn2Hi
  constexpr float kRoundMagic = 12582912.0f;  // 1.5·2^23: adding it rounds to an integer
  constexpr float kLowest = -87.3f;
  constexpr float kHighest = 88.7f;
  const F zero{};
  const F lowest = zero + kLowest;
  const F highest = zero + kHighest;
  F clamped = x < lowest ? lowest : x;
  clamped = clamped > highest ? highest : clamped;
  const F k = (clamped * kLog2e + kRoundMagic) - kRoundMagic;
  const F r = (clamped - k * kLn2Hi) - k * kLn2Lo;
  F p = zero + 1.0f / 720.0f;  // Horner form of Σ_{i≤6} rⁱ/i!
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  F two_k;
  if constexpr (std::is_same_v<F, float>) {
    const std::int32_t bits = (static_cast<std::int32_t>(k) + 127) << 23;
#if defined(__CUDA_ARCH__)
    two_k = __int_as_float(bits);
#else
    two_k = std::bit_cast<float>(bits);  // a memcpy here would block vectorisation
#endif
  } else {
#if !defined(__CUDACC__)
    typedef std::int32_t int_vector __attribute__((vector_size(sizeof(F))));
    two_k = std::bit_cast<F>((__builtin_convertvector(k, int_vector) + 127) << 23);
#endif
  }
  F y = p * two_k;
  y = x < lowest ? zero : y;
  y = x > highest ? zero + std::numeric_limits<float>::infinity() : y;
  return y;
}

// 2^x for x ≤ 0 (a softmax term taken against the running maximum), in the log2 domain where the
// Cody–Waite split is exact: k = round(x), r = x − k ∈ [−½, ½] exactly, 2^r = e^{r ln 2} by its
// degree-7 Taylor polynomial (truncation < (ln2/2)⁸/8! ≈ 5e-9). Inputs below −126 (−∞ included)
// are clamped to −126 and return 2⁻¹²⁶ ≈ 1.2e-38: negligible against a softmax sum ≥ 1, and
// cheaper than a select. About 14 operations a lane, all on the FMA/ALU pipes.
template <class F>
FS_HOST_DEVICE F fast_exp2_nonpositive(F x) {
  constexpr float kRoundMagic = 12582912.0f;  // 1.5·2^23
  const F zero{};
  const F lowest = zero - 126.0f;
  const F clamped = x < lowest ? lowest : x;
  const F k = (clamped + kRoundMagic) - kRoundMagic;
  const F r = clamped - k;
  F p = zero + 1.5252733804059840e-5f;  // (ln 2)^7/7!
  p = p * r + 1.5403530393381606e-4f;   // (ln 2)^6/6!
  p = p * r + 1.3333558146428443e-3f;   // (ln 2)^5/5!
  p = p * r + 9.6181291076284772e-3f;   // (ln 2)^4/4!
  p = p * r + 5.5504108664821580e-2f;   // (ln 2)^3/3!
  p = p * r + 2.4022650695910071e-1f;   // (ln 2)^2/2!
  p = p * r + 6.9314718055994531e-1f;   // ln 2
  p = p * r + 1.0f;
  F two_k;
  if constexpr (std::is_same_v<F, float>) {
    const std::int32_t bits = (static_cast<std::int32_t>(k) + 127) << 23;
#if defined(__CUDA_ARCH__)
    two_k = __int_as_float(bits);
#else
    two_k = std::bit_cast<float>(bits);
#endif
  } else {
#if !defined(__CUDACC__)
    typedef std::int32_t int_vector __attribute__((vector_size(sizeof(F))));
    two_k = std::bit_cast<F>((__builtin_convertvector(k, int_vector) + 127) << 23);
#endif
  }
  return p * two_k;
}

}  // namespace flashsinkhorn::math
