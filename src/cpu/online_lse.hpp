// Folding one tile of scores into a row's running LSE state (math::lse_state), vectorised:
//   tile_max = max_j s_j;  M = max(max, tile_max);  sum ← sum·e^{max − M} + Σ_j e^{s_j − M}.
// The running state is kept in double: one extra operation per tile buys an accumulation error
// independent of the number of tiles (m up to 10⁷ keys = 1.6·10⁵ tiles).
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

#include "math/fast_exp.hpp"
#include "math/lse_state.hpp"

namespace flashsinkhorn::detail {

template <class T>
inline T exp_term(T x) {
  if constexpr (sizeof(T) == 4) return math::fast_exp(x);
  else return std::exp(x);
}

template <class T>
inline T tile_max(const T* scores, std::int64_t count) {
  T m = -std::numeric_limits<T>::infinity();
#pragma omp simd reduction(max : m)
  for (std::int64_t j = 0; j < count; ++j) m = scores[j] > m ? scores[j] : m;
  return m;
}

// Σ_j e^{s_j − shift}; terms with s_j = −∞ contribute exactly 0.
template <class T>
inline T tile_sum_exp(const T* scores, std::int64_t count, T shift) {
  T sum = 0;
#pragma omp simd reduction(+ : sum)
  for (std::int64_t j = 0; j < count; ++j) sum += exp_term<T>(scores[j] - shift);
  return sum;
}

// Returns the new running maximum (the shift the tile's terms were taken against) and updates
// `state`; `rescale` receives e^{old max − new max} for accumulators that track the same state.
template <class T>
inline bool fold_tile(math::lse_state<double>& state, const T* scores, std::int64_t count, T& shift, double& rescale) {
  const T m_tile = tile_max(scores, count);
  const double m_new = std::max(state.max, static_cast<double>(m_tile));
  if (m_new == -std::numeric_limits<double>::infinity()) {
    rescale = 1;
    return false;  // every term so far has zero weight: the state stays the identity
  }
  rescale = std::exp(state.max - m_new);
  shift = static_cast<T>(m_new);
  state.sum = state.sum * rescale + static_cast<double>(tile_sum_exp(scores, count, shift));
  state.max = m_new;
  return true;
}

}  // namespace flashsinkhorn::detail
