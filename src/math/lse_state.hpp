// The running log-sum-exp as a monoid (GeomLoss/KeOps "reduction with identity and combine").
//
// State (max, sum) represents the number  max + log(sum),  i.e. LSE over the terms seen so far:
//   identity          (−∞, 0)                       — LSE of nothing
//   add(s)            one more term s
//   combine(A, B)     LSE over the union; associative and commutative, so the same code merges
//                     states across SIMD lanes, warps, CTAs (split-key) and GPUs.
// Guard: when both maxima are −∞ (every term so far had zero weight) the result stays the
// identity instead of computing exp(−∞ − −∞) = NaN.
#pragma once

#include <cmath>
#include <limits>

#include "math/host_device.hpp"

namespace flashsinkhorn::math {

template <class T>
struct lse_state {
  T max;  // largest term seen (−∞ if none)
  T sum;  // Σ exp(term − max)

  FS_HOST_DEVICE static lse_state identity() {
    return {-std::numeric_limits<T>::infinity(), T(0)};
  }

  // log Σ exp(term); −∞ for the identity.
  FS_HOST_DEVICE T value() const { return max + std::log(sum); }

  // The same state over terms kept in log2 units (t·log2 e, so that exp becomes exp2):
  // log2 Σ 2^term. Multiply by ln 2 for the natural LSE.
  FS_HOST_DEVICE T value_log2() const { return max + std::log2(sum); }
};

template <class T>
FS_HOST_DEVICE lse_state<T> combine(lse_state<T> a, lse_state<T> b) {
  const T m = a.max > b.max ? a.max : b.max;
  if (m == -std::numeric_limits<T>::infinity()) return lse_state<T>::identity();
  return {m, a.sum * std::exp(a.max - m) + b.sum * std::exp(b.max - m)};
}

// Merge a block of terms whose maximum `block_max` and rescaled sum Σ exp(term − block_max)
// are already known (the inner loop of a tile).
template <class T>
FS_HOST_DEVICE lse_state<T> combine_block(lse_state<T> running, T block_max, T block_sum) {
  return combine(running, lse_state<T>{block_max, block_sum});
}

}  // namespace flashsinkhorn::math
