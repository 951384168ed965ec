// The fp32 passes on narrow rows (d ≤ tile::kSimtFp32MaxDim, the fp32 mode's FMA dots:
// kernel_variant.hpp's fp32_fma_dots_for), shared by the softmin (softmin_narrow_kernel.cuh) and
// the one-column plan pass (plan_vector_narrow_kernel.cuh).
//
// At d ≤ 16 a score costs d FMAs against one exponential, so these passes are bound by the MUFU's
// ex2 rate (16 a clock per SM, SPEC §6), not by tensor cores; what they must avoid is every other
// instruction a pair costs. Hence:
//   - each thread owns kRowsPerThread rows, their queries in registers, so one shared-memory load
//     of a key serves that many scores;
//   - a key tile sits in shared memory packed as float4 words: the key's kDim coordinates, β_j
//     (log2 units, −∞ on padding keys), then the optional value v_j — at d ≤ 2 one 128-bit
//     broadcast load brings all a key contributes;
//   - the dot product has a compile-time length (the instances of narrow_dims.hpp; columns past d
//     are the storage's zero padding);
//   - scores are formed kSubKeys at a time, and a row's reference maximum moves only when a
//     sub-tile exceeds it (a branch rarely taken once the row has met its large scores), so the
//     online softmax costs one FMNMX and one ex2 per score.
// Scores are in log2 units, FMA dots at 2⁻²⁴ (the CPU backend's fp32 arithmetic, not the 3×TF32
// dots of the tensor-core kernels), in one of two forms (narrow_scores):
//   softmin  t_ij = fma(p_i·q_j, (2s/ε)·log₂e, β_j), the row's own −s‖p_i‖²/ε left out (constant
//            along the row); the reference is the running row maximum.
//   plan     t_ij = fma(p_i·q_j, (2s/ε)·log₂e, α_i + β_j) with α_i the row's own bias from its
//            potential (score_bias_log2): t is log₂ of the plan's entry and rounds alike whichever
//            side holds the rows (the dot, the sum α + β and the FMA all commute). The reference is
//            an integer k ≥ every score seen, so that t − k is exact while k ≤ 0 (t ≤ k ≤ 0 has
//            |t − k| ≤ |t| on t's own grid): each entry 2^(t − k)·2^k is then one ex2 of the same
//            argument in the x-rows and the y-rows passes — the two products of the Hessian's
//            conjugate gradients apply one matrix, bit for bit, and only their sums' order differs.
//            A plan of unit mass has t ≤ 0; a score above 0 (mass > 1) loses that exactness only
//            in its own row.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/softmin_kernel.cuh"
#include "cuda/tile_config.hpp"

namespace flashsinkhorn::detail::kernels {

namespace narrow {
inline constexpr int kThreads = 128;
inline constexpr int kRowsPerThread = 4;
inline constexpr int kBlockRows = kThreads * kRowsPerThread;
// Keys per shared tile; cloud rows are padded to kRowPadding, so a tile never reads past them.
inline constexpr int kTileKeys = 128;
static_assert(tile::kRowPadding % kTileKeys == 0);

// Scores held per row before their exponentials: 16 keys, or 8 on wider rows (registers).
template <int kDim>
inline constexpr int kSubKeys = kDim <= 4 ? 16 : 8;
}  // namespace narrow

// One key tile in shared memory: per key kVecs float4 words (coordinates, β, value, zeros).
template <int kDim, bool kValue>
struct narrow_key_tile {
  static constexpr int kWords = kDim + 1 + (kValue ? 1 : 0);
  static constexpr int kVecs = (kWords + 3) / 4;
  float4 key[narrow::kTileKeys][kVecs];

  // Keys [key0, key0 + kTileKeys) from the stored points (rows padded_dim apart), β and the values
  // (nullptr: zeros). All threads take part; the caller synchronises around it.
  __device__ __forceinline__ void load(const float* points, std::int64_t padded_dim, const float* bias,
                                       const float* values, std::int64_t key0) {
    float* words = reinterpret_cast<float*>(key);
    for (int idx = threadIdx.x; idx < narrow::kTileKeys * kVecs * 4; idx += blockDim.x) {
      const int j = idx / (kVecs * 4);
      const int w = idx % (kVecs * 4);
      const std::int64_t at = key0 + j;
      float word = 0.f;
      if (w < kDim) word = points[at * padded_dim + w];
      else if (w == kDim) word = bias[at];
      else if (kValue && w == kDim + 1 && values != nullptr) word = values[at];
      words[idx] = word;
    }
  }

  // Key j's words in registers.
  __device__ __forceinline__ void read(int j, float (&out)[kVecs * 4]) const {
#pragma unroll
    for (int v = 0; v < kVecs; ++v) {
      const float4 word = key[j][v];
      out[4 * v] = word.x;
      out[4 * v + 1] = word.y;
      out[4 * v + 2] = word.z;
      out[4 * v + 3] = word.w;
    }
  }
};

// The rows a thread owns: row r of the CTA's block is row0 + r·kThreads + threadIdx.x.
template <int kDim>
struct narrow_queries {
  float q[narrow::kRowsPerThread][kDim];
  float bias[narrow::kRowsPerThread];  // α_i of the plan scores (the caller sets it), else unused

  __device__ __forceinline__ static std::int64_t row(std::int64_t row0, int r) {
    return row0 + static_cast<std::int64_t>(r) * narrow::kThreads + threadIdx.x;
  }
  // Rows past rows_padded (the block's last rows) read as zeros and are never written.
  __device__ __forceinline__ void load(const float* points, std::int64_t padded_dim, std::int64_t rows_padded,
                                       std::int64_t row0) {
#pragma unroll
    for (int r = 0; r < narrow::kRowsPerThread; ++r) {
      const std::int64_t i = row(row0, r);
#pragma unroll
      for (int c = 0; c < kDim; ++c) q[r][c] = i < rows_padded ? points[i * padded_dim + c] : 0.f;
    }
  }
};

enum class narrow_scores { softmin, plan };

// The online softmax of a thread's rows in log2 units: reference[r] is the reference maximum (−∞
// before any score), sum[r] = Σ 2^(t − reference), weighted[r] = Σ 2^(t − reference)·v_j (kValue).
// Each fp32 sub-tile sum (kSubKeys terms) joins a running Sum: float for the softmin (as its
// tensor-core kernels), double for the plan passes, whose sums then carry only the sub-tiles'
// rounding, alike in both orientations to 2⁻²⁴ rather than to n·2⁻²⁴.
template <class Sum>
struct narrow_row_states {
  float reference[narrow::kRowsPerThread];
  Sum sum[narrow::kRowsPerThread];
  Sum weighted[narrow::kRowsPerThread];

  __device__ __forceinline__ void reset() {
#pragma unroll
    for (int r = 0; r < narrow::kRowsPerThread; ++r) {
      reference[r] = -INFINITY;
      sum[r] = 0;
      weighted[r] = 0;
    }
  }
};

// Folds one shared tile's keys into the thread's row states.
template <narrow_scores kScores, int kDim, bool kValue, class Sum>
__device__ __forceinline__ void fold_narrow_tile(const narrow_key_tile<kDim, kValue>& tile,
                                                 const narrow_queries<kDim>& rows, float scale,
                                                 narrow_row_states<Sum>& state) {
  constexpr int kRows = narrow::kRowsPerThread;
  constexpr int kSub = narrow::kSubKeys<kDim>;
  constexpr bool kPlan = kScores == narrow_scores::plan;
  using tile_t = narrow_key_tile<kDim, kValue>;
#pragma unroll 1
  for (int sub = 0; sub < narrow::kTileKeys; sub += kSub) {
    float t[kRows][kSub];
    float value[kSub];
    float top[kRows];
#pragma unroll
    for (int r = 0; r < kRows; ++r) top[r] = -INFINITY;
#pragma unroll
    for (int jj = 0; jj < kSub; ++jj) {
      float word[tile_t::kVecs * 4];
      tile.read(sub + jj, word);
      if constexpr (kValue) value[jj] = word[kDim + 1];
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        float dot = rows.q[r][0] * word[0];
#pragma unroll
        for (int c = 1; c < kDim; ++c) dot = fmaf(rows.q[r][c], word[c], dot);
        t[r][jj] = fmaf(dot, scale, kPlan ? rows.bias[r] + word[kDim] : word[kDim]);
        top[r] = fmaxf(top[r], t[r][jj]);
      }
    }
    float base[kRows];
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      if (top[r] > state.reference[r]) {  // rare once the row has met its largest scores
        const float moved = kPlan ? ceilf(top[r]) : top[r];
        if constexpr (kPlan) {  // an exact power of two; 0 from −∞ (the sums are still 0)
          const int shift = state.reference[r] == -INFINITY ? 0 : static_cast<int>(state.reference[r] - moved);
          state.sum[r] = ldexp(state.sum[r], shift);
          if constexpr (kValue) state.weighted[r] = ldexp(state.weighted[r], shift);
        } else {
          const float rescale = fast_exp2(state.reference[r] - moved);  // 0 from −∞
          state.sum[r] *= rescale;
          if constexpr (kValue) state.weighted[r] *= rescale;
        }
        state.reference[r] = moved;
      }
      // Only −∞ scores so far: 2^(−∞ − 0) = 0 rather than (−∞) − (−∞).
      base[r] = state.reference[r] == -INFINITY ? 0.f : state.reference[r];
    }
    float sub_sum[kRows], sub_weighted[kRows];
#pragma unroll
    for (int r = 0; r < kRows; ++r) sub_sum[r] = sub_weighted[r] = 0.f;
#pragma unroll
    for (int jj = 0; jj < kSub; ++jj) {
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        const float e = fast_exp2(t[r][jj] - base[r]);
        sub_sum[r] += e;
        if constexpr (kValue) sub_weighted[r] = fmaf(e, value[jj], sub_weighted[r]);
      }
    }
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      state.sum[r] += sub_sum[r];
      if constexpr (kValue) state.weighted[r] += sub_weighted[r];
    }
  }
}

// A thread's rows over the key tiles [tile_begin, tile_end): the shared tile loop of both kernels.
template <narrow_scores kScores, int kDim, bool kValue, class Sum>
__device__ __forceinline__ void fold_narrow_keys(narrow_key_tile<kDim, kValue>& tile, const float* key_points,
                                                 std::int64_t padded_dim, const float* bias, const float* values,
                                                 int tile_begin, int tile_end, const narrow_queries<kDim>& rows,
                                                 float scale, narrow_row_states<Sum>& state) {
  for (int key_tile = tile_begin; key_tile < tile_end; ++key_tile) {
    __syncthreads();  // the previous tile is consumed
    tile.load(key_points, padded_dim, bias, values, static_cast<std::int64_t>(key_tile) * narrow::kTileKeys);
    __syncthreads();
    fold_narrow_tile<kScores>(tile, rows, scale, state);
  }
}

}  // namespace flashsinkhorn::detail::kernels
