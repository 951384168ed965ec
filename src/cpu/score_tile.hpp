// The CPU backend's inner product: one register block of kRowBlock rows against one key panel of
// kKeyTile keys,
//   dots[r][j] = Σ_k p[r][k]·q_j[k]       (r < kRowBlock, j < kKeyTile)
// computed kVecsPerStrip SIMD vectors of keys at a time with the rows' coordinates broadcast: a
// 6 × 16-float accumulator block lives in 12 AVX2 registers, 6 × 32 floats in 24 of AVX-512's 32
// (an outer-product micro-kernel, as in BLIS). GCC/Clang vector extensions keep it portable: on
// narrower SIMD the compiler splits vectors.
#pragma once

#include <cstdint>
#include <cstring>

#include "cpu/packed_cloud.hpp"

namespace flashsinkhorn::detail {

template <class T>
struct simd {
  static constexpr int kBytes = 32;
  static constexpr int kLanes = kBytes / static_cast<int>(sizeof(T));
  typedef T vec __attribute__((vector_size(kBytes)));
};

template <class T>
inline typename simd<T>::vec load_vec(const T* p) {
  typename simd<T>::vec v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

template <class T>
inline void store_vec(T* p, typename simd<T>::vec v) {
  std::memcpy(p, &v, sizeof v);
}

// Σ_j a_j·b_j in T over `count` entries (a multiple of the SIMD width), one vector accumulator.
template <class T>
inline T simd_dot(const T* __restrict a, const T* __restrict b, std::int64_t count) {
  typename simd<T>::vec sum{};
  for (std::int64_t j = 0; j < count; j += simd<T>::kLanes) sum += load_vec(a + j) * load_vec(b + j);
  T total = 0;
  for (int lane = 0; lane < simd<T>::kLanes; ++lane) total += sum[lane];
  return total;
}

// Keys per strip, in SIMD vectors: 6 rows × 2 vectors of accumulators + 2 key loads fill AVX2's 16
// registers; with AVX-512's 32 (ymm16–31 through EVEX) 6 × 4 + 4 fit, which halves the strips a
// panel takes and so the times a register block's rows are read again (from L2 once 6 rows × d
// exceed L1: d ≥ 512 in double).
#if defined(__AVX512F__)
inline constexpr int kVecsPerStrip = 4;
#else
inline constexpr int kVecsPerStrip = 2;
#endif

// dots: (kRowBlock, kKeyTile) row-major. rows: kRowBlock consecutive rows of a packed cloud.
// panel: (dim, kKeyTile) key-fastest.
template <class T>
void score_tile_dots(T* __restrict dots, const T* __restrict rows, const T* __restrict panel, std::int64_t dim) {
  using vec = typename simd<T>::vec;
  constexpr int kLanes = simd<T>::kLanes;
  constexpr int kStripKeys = kVecsPerStrip * kLanes;
  static_assert(kKeyTile % kStripKeys == 0, "a panel splits into whole strips");
  for (int strip = 0; strip < kKeyTile / kStripKeys; ++strip) {
    vec acc[kRowBlock][kVecsPerStrip] = {};
    const T* column = panel + strip * kStripKeys;
    for (std::int64_t k = 0; k < dim; ++k) {
      vec q[kVecsPerStrip];
#pragma GCC unroll 4
      for (int v = 0; v < kVecsPerStrip; ++v) q[v] = load_vec(column + k * kKeyTile + v * kLanes);
#pragma GCC unroll 6
      for (int r = 0; r < kRowBlock; ++r) {
        const T p = rows[r * dim + k];
#pragma GCC unroll 4
        for (int v = 0; v < kVecsPerStrip; ++v) acc[r][v] += p * q[v];
      }
    }
#pragma GCC unroll 6
    for (int r = 0; r < kRowBlock; ++r) {
#pragma GCC unroll 4
      for (int v = 0; v < kVecsPerStrip; ++v)
        store_vec(dots + r * kKeyTile + strip * kStripKeys + v * kLanes, acc[r][v]);
    }
  }
}

}  // namespace flashsinkhorn::detail
