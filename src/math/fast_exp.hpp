// 2^x on the FMA pipe: branch-free, so loops over it vectorise (CPU SIMD), and on GPUs it can take
// exponentials off the MUFU unit (FlashAttention-4's trick). Softmax terms are taken against a
// running maximum, so arguments are ≤ 0 and scores are kept in log2 units (the callers fold
// log2 e into their scale and bias).
//
// F is float, or (host only) a GCC/Clang vector of floats — the same code, lane-wise.
#pragma once

#include <bit>
#include <cstdint>
#include <type_traits>

#include "math/host_device.hpp"

namespace flashsinkhorn::math {

// 2^x for x ≤ 0. The argument reduction is exact in the log2 domain: k = round(x), r = x − k ∈ [−½, ½] exactly, 2^r = e^{r ln 2} by its
// degree-7 Taylor polynomial (truncation < (ln2/2)⁸/8! ≈ 5e-9). Inputs below −126 (−∞ included)
// are clamped to −126 and return 2⁻¹²⁶ ≈ 1.2e-38: negligible against a softmax sum ≥ 1, and
// cheaper than a select. About 14 operations a lane, all on the FMA/ALU pipes. Measured relative
// error against std::exp2 over [−126, 0]: below 2 ulp (tests/cpp/math_test.cpp).
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
