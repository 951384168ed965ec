// Folding one tile of scores into a row's running LSE state (math::lse_state), vectorised:
//   tile_max = max_j s_j;  M = max(max, tile_max);  sum ← sum·2^{max − M} + Σ_j 2^{s_j − M}.
// Scores are in log2 units (the backend folds log2 e into its scale and bias), so every
// exponential is an exp2 of a non-positive argument: math::fast_exp2_nonpositive.
// The running state is kept in double: one extra operation per tile buys an accumulation error
// independent of the number of tiles (m up to 10⁷ keys = 1.6·10⁵ tiles).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "math/fast_exp.hpp"
#include "cpu/score_tile.hpp"
#include "math/lse_state.hpp"

namespace flashsinkhorn::detail {

// scores_j = scale·dots_j + bias_j, returning max_j scores_j, in one pass. count: a multiple of the
// SIMD width (whole key panels). Written with vector types because GCC does not vectorise a
// max-reduction of floats on its own (NaN ordering).
template <class T>
inline T score_and_max(T* __restrict scores, const T* __restrict dots, const T* __restrict bias, T scale,
                       std::int64_t count) {
  using vec = typename simd<T>::vec;
  constexpr int kLanes = simd<T>::kLanes;
  vec m{};
  m -= std::numeric_limits<T>::infinity();
  for (std::int64_t j = 0; j < count; j += kLanes) {
    const vec s = scale * load_vec(dots + j) + load_vec(bias + j);
    store_vec(scores + j, s);
    m = s > m ? s : m;
  }
  T result = m[0];
  for (int lane = 1; lane < kLanes; ++lane) result = m[lane] > result ? m[lane] : result;
  return result;
}

// Σ_j 2^{s_j − shift} (s_j ≤ shift), vectorised; count: a multiple of the SIMD width. With
// kKeepTerms the terms 2^{s_j − shift} are stored in `terms` too (the weights of a plan pass's tile).
template <bool kKeepTerms = false, class T>
inline T tile_sum_exp(const T* __restrict scores, std::int64_t count, T shift, T* __restrict terms = nullptr) {
  using vec = typename simd<T>::vec;
  constexpr int kLanes = simd<T>::kLanes;
  vec sum{};
  for (std::int64_t j = 0; j < count; j += kLanes) {
    const vec term = math::fast_exp2_nonpositive(load_vec(scores + j) - shift);
    if constexpr (kKeepTerms) store_vec(terms + j, term);
    sum += term;
  }
  T total = 0;
  for (int lane = 0; lane < kLanes; ++lane) total += sum[lane];
  return total;
}

// Folds a tile whose scores and maximum are known into `state`. Returns false while every term so
// far has zero weight (the state stays the identity). `shift` receives the running maximum the
// tile's terms were taken against; `rescale` = 2^{old max − new max} for accumulators tracking
// the same state — exactly 1, with no exp evaluated, when the tile does not raise the maximum,
// which is the common case after the first tiles. With `terms` (count entries) the tile's terms
// 2^{s_j − shift} are kept there too, for a plan pass's accumulators.
template <class T>
inline bool fold_tile(math::lse_state<double>& state, const T* scores, T tile_maximum, std::int64_t count, T& shift,
                      double& rescale, T* terms = nullptr) {
  rescale = 1;
  if (static_cast<double>(tile_maximum) > state.max) {
    rescale = state.max == -std::numeric_limits<double>::infinity() ? 0.0 : std::exp2(state.max - tile_maximum);
    state.max = tile_maximum;
  } else if (state.max == -std::numeric_limits<double>::infinity()) {
    return false;
  }
  shift = static_cast<T>(state.max);
  const T tile_sum =
      terms != nullptr ? tile_sum_exp<true>(scores, count, shift, terms) : tile_sum_exp(scores, count, shift);
  state.sum = state.sum * rescale + static_cast<double>(tile_sum);
  return true;
}

}  // namespace flashsinkhorn::detail
