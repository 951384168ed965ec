// 2^x on the FMA pipe (float and double): branch-free, so loops over it vectorise (CPU SIMD), and on GPUs it can take
// exponentials off the MUFU unit (FlashAttention-4's trick). Softmax terms are taken against a
// running maximum, so arguments are ≤ 0 and scores are kept in log2 units (the callers fold
// log2 e into their scale and bias).
//
#pragma once

#include <bit>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "math/host_device.hpp"

namespace flashsinkhorn::math {

// Format constants of the exp2 polynomial: degree, clamp, rounding magic, exponent field.
template <class E>
struct exp2_format;

template <>
struct exp2_format<float> {
  using bits = std::int32_t;
  static constexpr int kDegree = 7;           // truncation (ln2/2)⁸/8! ≈ 5e-9 < 2⁻²⁴
  static constexpr float kLowest = -126.0f;   // smallest normal power of two
  static constexpr float kRoundMagic = 12582912.0f;  // 1.5·2²³: adding it rounds to an integer
  static constexpr int kMantissaBits = 23;
  static constexpr int kBias = 127;
};

template <>
struct exp2_format<double> {
  using bits = std::int64_t;
  static constexpr int kDegree = 13;          // truncation (ln2/2)¹⁴/14! ≈ 4e-18 < 2⁻⁵³
  static constexpr double kLowest = -1022.0;
  static constexpr double kRoundMagic = 6755399441055744.0;  // 1.5·2⁵²
  static constexpr int kMantissaBits = 52;
  static constexpr int kBias = 1023;
};

// (ln 2)^i / i!, the Taylor coefficients of 2^r = e^{r ln 2}.
FS_HOST_DEVICE constexpr double exp2_taylor_coefficient(int i) {
  double c = 1;
  for (int k = 1; k <= i; ++k) c *= 0.69314718055994530942 / k;
  return c;
}

template <class F>
struct element_of {
  using type = std::remove_cvref_t<decltype(std::declval<F>()[0])>;
};
template <>
struct element_of<float> {
  using type = float;
};
template <>
struct element_of<double> {
  using type = double;
};

// 2^x for x ≤ 0, in float or double (F: the scalar, or on the host a GCC/Clang vector of it). The
// argument reduction is exact in the log2 domain: k = round(x), r = x − k ∈ [−½, ½] exactly; 2^r by
// its Taylor polynomial of exp2_format's degree (below the unit roundoff). Inputs below the smallest
// normal exponent (−∞ included) are clamped to it and return 2⁻¹²⁶ ≈ 1.2e-38 (float) or 2⁻¹⁰²² (double):
// negligible against a softmax sum ≥ 1, and cheaper than a select. About 14 (float) or 20 (double)
// operations a lane, all on the FMA/ALU pipes. Measured relative error against std::exp2: below
// 2 ulp (float) and 4 ulp (double) (tests/cpp/math_test.cpp).
template <class F>
FS_HOST_DEVICE F fast_exp2_nonpositive(F x) {
  using E = typename element_of<F>::type;
  using format = exp2_format<E>;
  const F zero{};
  const F lowest = zero + format::kLowest;
  const F clamped = x < lowest ? lowest : x;
  const F k = (clamped + format::kRoundMagic) - format::kRoundMagic;
  const F r = clamped - k;
  F p = zero + static_cast<E>(exp2_taylor_coefficient(format::kDegree));
FS_UNROLL
  for (int i = format::kDegree - 1; i >= 0; --i) p = p * r + static_cast<E>(exp2_taylor_coefficient(i));
  F two_k;
  using bits = typename format::bits;
  if constexpr (std::is_same_v<F, E>) {
    const bits exponent = (static_cast<bits>(k) + format::kBias) << format::kMantissaBits;
#if defined(__CUDA_ARCH__)
    if constexpr (sizeof(E) == 4) two_k = __int_as_float(exponent);
    else two_k = __longlong_as_double(exponent);
#else
    two_k = std::bit_cast<E>(exponent);  // a memcpy here would block vectorisation
#endif
  } else {
#if !defined(__CUDACC__)
    typedef bits bits_vector __attribute__((vector_size(sizeof(F))));
    two_k = std::bit_cast<F>((__builtin_convertvector(k, bits_vector) + format::kBias) << format::kMantissaBits);
#endif
  }
  return p * two_k;
}

}  // namespace flashsinkhorn::math
