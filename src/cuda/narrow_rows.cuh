// The passes on narrow rows of the fp32 mode (d ≤ tile::kSimtFp32MaxDim with FMA dots:
// kernel_variant.hpp's fp32_fma_dots_for), in one of two arithmetics (Real):
//   float   the softmin (softmin_narrow_kernel.cuh): fp32 FMA dots at 2⁻²⁴ (the CPU backend's fp32
//           arithmetic, not the 3×TF32 dots of the tensor-core kernels), log2 units, ex2.approx;
//   double  the one-column plan pass (plan_vector_narrow_kernel.cuh): the float points widened (a
//           product of two floats is exact in float64), natural units, exp — the arithmetic of the
//           float64 SIMT pass (plan_rows_kernel.cuh), which the Hessian's CG needs in both its
//           products and its masses (plan_rows_launch.hpp, plan_pass_is_float64).
//
// At d ≤ 16 a score costs d FMAs against one exponential, so these passes are bound by the
// exponential (the MUFU's ex2 rate in fp32, 16 a clock per SM, SPEC §6; float64's exp, ~20 FP64
// instructions), not by tensor cores; what they must avoid is every other instruction a pair
// costs. Hence:
//   - each thread owns narrow::rows_per_thread<Real> rows, their queries in registers, so one
//     shared-memory load of a key serves that many scores;
//   - a key tile sits in shared memory packed as 16-byte words: the key's kDim coordinates, β_j
//     (−∞ on padding keys), then the optional value v_j — in fp32 at d ≤ 2 one 128-bit broadcast
//     load brings all a key contributes;
//   - the dot product has a compile-time length (the instances of narrow_dims.hpp; columns past d
//     are the storage's zero padding);
//   - scores are formed narrow::sub_keys<Real, kDim> at a time, and a row's reference maximum moves
//     only when a sub-tile exceeds it (a branch rarely taken once the row has met its large
//     scores), so the online softmax costs one max and one exponential per score.
// Scores are t_ij = fma(p_i·q_j, c, β_j) with c = 2s/ε (·log₂e in fp32) and the row's own
// −s‖p_i‖²/ε left out (constant along the row).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "cuda/softmin_kernel.cuh"
#include "cuda/tile_config.hpp"
#include "math/exp_by_exp2.hpp"

namespace flashsinkhorn::detail::kernels {

namespace narrow {
inline constexpr int kThreads = 128;
// Keys per shared tile; cloud rows are padded to kRowPadding, so a tile never reads past them.
inline constexpr int kTileKeys = 128;
static_assert(tile::kRowPadding % kTileKeys == 0);

// Rows a thread owns (registers: a float64 row holds twice the words).
template <class Real>
inline constexpr int rows_per_thread = sizeof(Real) == 4 ? 4 : 2;
template <class Real>
inline constexpr int block_rows = kThreads * rows_per_thread<Real>;

// Scores held per row before their exponentials: in fp32 16 keys, or 8 on wider rows; 4 in float64.
template <class Real, int kDim>
inline constexpr int sub_keys = sizeof(Real) == 8 ? 4 : kDim <= 4 ? 16 : 8;

// The exponential of the arithmetic: 2^x in fp32 (log2 units, the MUFU), e^x in float64 —
// libdevice's, or with kByEx2 math::exp_by_exp2 (2^f on the MUFU; FLASHSINKHORN_FP32_PASS_EXP).
template <bool kByEx2>
__device__ __forceinline__ float exponential(float x) { return fast_exp2(x); }
template <bool kByEx2>
__device__ __forceinline__ double exponential(double x) { return math::pass_exp<kByEx2>(x); }
}  // namespace narrow

// One key tile in shared memory: per key kVecs 16-byte words (coordinates, β, value, zeros).
template <class Real, int kDim, bool kValue>
struct narrow_key_tile {
  using word_t = std::conditional_t<sizeof(Real) == 4, float4, double2>;
  static constexpr int kLanes = 16 / sizeof(Real);  // Reals per 16-byte word
  static constexpr int kWords = kDim + 1 + (kValue ? 1 : 0);
  static constexpr int kVecs = (kWords + kLanes - 1) / kLanes;
  word_t key[narrow::kTileKeys][kVecs];

  // Keys [key0, key0 + kTileKeys) from the stored float points (rows padded_dim apart), β and the
  // values (column 0 of rows value_stride apart; zeros past value_count or without values). All
  // threads take part; the caller synchronises around it.
  __device__ __forceinline__ void load(const float* points, std::int64_t padded_dim, const Real* bias,
                                       const Real* values, std::int64_t value_stride, std::int64_t value_count,
                                       std::int64_t key0) {
    Real* words = reinterpret_cast<Real*>(key);
    for (int idx = threadIdx.x; idx < narrow::kTileKeys * kVecs * kLanes; idx += blockDim.x) {
      const int j = idx / (kVecs * kLanes);
      const int w = idx % (kVecs * kLanes);
      const std::int64_t at = key0 + j;
      Real word = 0;
      if (w < kDim) word = static_cast<Real>(points[at * padded_dim + w]);
      else if (w == kDim) word = bias[at];
      else if (kValue && w == kDim + 1 && values != nullptr && at < value_count) word = values[at * value_stride];
      words[idx] = word;
    }
  }

  // Key j's words in registers.
  __device__ __forceinline__ void read(int j, Real (&out)[kVecs * kLanes]) const {
#pragma unroll
    for (int v = 0; v < kVecs; ++v) {
      const word_t word = key[j][v];
      if constexpr (kLanes == 4) {
        out[4 * v] = word.x;
        out[4 * v + 1] = word.y;
        out[4 * v + 2] = word.z;
        out[4 * v + 3] = word.w;
      } else {
        out[2 * v] = word.x;
        out[2 * v + 1] = word.y;
      }
    }
  }
};

// The rows a thread owns: row r of the CTA's block is row0 + r·kThreads + threadIdx.x.
template <class Real, int kDim>
struct narrow_queries {
  static constexpr int kRows = narrow::rows_per_thread<Real>;
  Real q[kRows][kDim];

  __device__ __forceinline__ static std::int64_t row(std::int64_t row0, int r) {
    return row0 + static_cast<std::int64_t>(r) * narrow::kThreads + threadIdx.x;
  }
  // Rows past rows_padded (the block's last rows) read as zeros and are never written.
  __device__ __forceinline__ void load(const float* points, std::int64_t padded_dim, std::int64_t rows_padded,
                                       std::int64_t row0) {
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      const std::int64_t i = row(row0, r);
#pragma unroll
      for (int c = 0; c < kDim; ++c) q[r][c] = i < rows_padded ? static_cast<Real>(points[i * padded_dim + c]) : Real(0);
    }
  }
};

// The online softmax of a thread's rows: reference[r] is the largest score seen (−∞ before any),
// sum[r] = Σ exp(t − reference), weighted[r] = Σ exp(t − reference)·v_j (kValue); each sub-tile's
// sum joins the running one.
template <class Real>
struct narrow_row_states {
  static constexpr int kRows = narrow::rows_per_thread<Real>;
  Real reference[kRows];
  Real sum[kRows];
  Real weighted[kRows];

  __device__ __forceinline__ void reset() {
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      reference[r] = -INFINITY;
      sum[r] = 0;
      weighted[r] = 0;
    }
  }
};

// Folds one shared tile's keys into the thread's row states (kByEx2: narrow::exponential's).
template <class Real, int kDim, bool kValue, bool kByEx2 = false>
__device__ __forceinline__ void fold_narrow_tile(const narrow_key_tile<Real, kDim, kValue>& tile,
                                                 const narrow_queries<Real, kDim>& rows, Real scale,
                                                 narrow_row_states<Real>& state) {
  constexpr int kRows = narrow::rows_per_thread<Real>;
  constexpr int kSub = narrow::sub_keys<Real, kDim>;
  using tile_t = narrow_key_tile<Real, kDim, kValue>;
#pragma unroll 1
  for (int sub = 0; sub < narrow::kTileKeys; sub += kSub) {
    Real t[kRows][kSub];
    Real value[kSub];
    Real top[kRows];
#pragma unroll
    for (int r = 0; r < kRows; ++r) top[r] = -INFINITY;
#pragma unroll
    for (int jj = 0; jj < kSub; ++jj) {
      Real word[tile_t::kVecs * tile_t::kLanes];
      tile.read(sub + jj, word);
      if constexpr (kValue) value[jj] = word[kDim + 1];
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        Real dot = rows.q[r][0] * word[0];
#pragma unroll
        for (int c = 1; c < kDim; ++c) dot = fma(rows.q[r][c], word[c], dot);
        t[r][jj] = fma(dot, scale, word[kDim]);
        top[r] = fmax(top[r], t[r][jj]);
      }
    }
    Real base[kRows];
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      if (top[r] > state.reference[r]) {  // rare once the row has met its largest scores
        const Real rescale = narrow::exponential<false>(state.reference[r] - top[r]);  // 0 from −∞
        state.sum[r] *= rescale;
        if constexpr (kValue) state.weighted[r] *= rescale;
        state.reference[r] = top[r];
      }
      // Only −∞ scores so far: exp(−∞ − 0) = 0 rather than (−∞) − (−∞).
      base[r] = state.reference[r] == -INFINITY ? Real(0) : state.reference[r];
    }
    Real sub_sum[kRows], sub_weighted[kRows];
#pragma unroll
    for (int r = 0; r < kRows; ++r) sub_sum[r] = sub_weighted[r] = 0;
#pragma unroll
    for (int jj = 0; jj < kSub; ++jj) {
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        const Real e = narrow::exponential<kByEx2>(t[r][jj] - base[r]);
        sub_sum[r] += e;
        if constexpr (kValue) sub_weighted[r] = fma(e, value[jj], sub_weighted[r]);
      }
    }
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      state.sum[r] += sub_sum[r];
      if constexpr (kValue) state.weighted[r] += sub_weighted[r];
    }
  }
}

// The keys of a narrow pass: stored float points (padded_dim apart), β (keys_padded), and the
// optional value column (count entries, stride apart; nullptr: none).
template <class Real>
struct narrow_keys {
  const float* points;
  std::int64_t padded_dim;
  const Real* bias;
  const Real* values;
  std::int64_t value_stride;
  std::int64_t count;
};

// The shared tile loop of every narrow kernel: key tiles [tile_begin, tile_end) loaded in turn into
// `tile` by all threads, `fold()` called on each once it is complete.
template <class Real, int kDim, bool kValue, class Fold>
__device__ __forceinline__ void for_each_narrow_tile(narrow_key_tile<Real, kDim, kValue>& tile,
                                                     const narrow_keys<Real>& keys, int tile_begin, int tile_end,
                                                     Fold fold) {
  for (int key_tile = tile_begin; key_tile < tile_end; ++key_tile) {
    __syncthreads();  // the previous tile is consumed
    tile.load(keys.points, keys.padded_dim, keys.bias, keys.values, keys.value_stride, keys.count,
              static_cast<std::int64_t>(key_tile) * narrow::kTileKeys);
    __syncthreads();
    fold();
  }
}

// A thread's rows over the key tiles [tile_begin, tile_end) with the online maximum.
template <class Real, int kDim, bool kValue, bool kByEx2 = false>
__device__ __forceinline__ void fold_narrow_keys(narrow_key_tile<Real, kDim, kValue>& tile, const narrow_keys<Real>& keys,
                                                 int tile_begin, int tile_end, const narrow_queries<Real, kDim>& rows,
                                                 Real scale, narrow_row_states<Real>& state) {
  for_each_narrow_tile(tile, keys, tile_begin, tile_end,
                       [&] { fold_narrow_tile<Real, kDim, kValue, kByEx2>(tile, rows, scale, state); });
}

}  // namespace flashsinkhorn::detail::kernels
