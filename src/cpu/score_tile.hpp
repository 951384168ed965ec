// The CPU backend's inner product: one register block of kRowBlock rows against one key panel of
// kKeyTile keys,
//   dots[r][j] = Σ_k p[r][k]·q_j[k]       (r < kRowBlock, j < kKeyTile)
// computed kVecsPerStrip SIMD vectors of keys at a time with the rows' coordinates broadcast: a
// 6 × 16-float accumulator block lives in 12 AVX2 registers (an outer-product micro-kernel, as in
// BLIS). GCC/Clang vector extensions keep it portable: on narrower SIMD the compiler splits vectors.
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

inline constexpr int kVecsPerStrip = 2;  // keys per strip = 2 vectors (16 floats / 8 doubles)

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
      const vec q0 = load_vec(column + k * kKeyTile);
      const vec q1 = load_vec(column + k * kKeyTile + kLanes);
#pragma GCC unroll 6
      for (int r = 0; r < kRowBlock; ++r) {
        const T p = rows[r * dim + k];
        acc[r][0] += p * q0;
        acc[r][1] += p * q1;
      }
    }
#pragma GCC unroll 6
    for (int r = 0; r < kRowBlock; ++r) {
      store_vec(dots + r * kKeyTile + strip * kStripKeys, acc[r][0]);
      store_vec(dots + r * kKeyTile + strip * kStripKeys + kLanes, acc[r][1]);
    }
  }
}

}  // namespace flashsinkhorn::detail
