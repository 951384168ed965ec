// Rounding a float to the operand formats of the tensor cores, round-to-nearest-even, so the CPU
// backend reproduces what the GPU's MMA sees (and the norms are computed from the same values).
//   tf32: 1 sign, 8 exponent, 10 mantissa bits (relative spacing 2⁻¹⁰, unit roundoff 2⁻¹¹)
//   bf16: 1 sign, 8 exponent,  7 mantissa bits (unit roundoff 2⁻⁸)
// Finite inputs only (validated upstream).
#pragma once

#include <cstdint>
#include <cstring>

#include "math/host_device.hpp"

namespace flashsinkhorn::math {

// Keeps the top (23 − dropped_bits) mantissa bits of x, rounding to nearest even.
FS_HOST_DEVICE float round_mantissa(float x, int dropped_bits) {
  std::uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  const std::uint32_t half = 1u << (dropped_bits - 1);
  const std::uint32_t lsb = (bits >> dropped_bits) & 1u;
  bits += half - 1 + lsb;
  bits &= ~((1u << dropped_bits) - 1);
  float y;
  std::memcpy(&y, &bits, sizeof y);
  return y;
}

FS_HOST_DEVICE float round_to_tf32(float x) { return round_mantissa(x, 13); }
FS_HOST_DEVICE float round_to_bf16(float x) { return round_mantissa(x, 16); }

}  // namespace flashsinkhorn::math
