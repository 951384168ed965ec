// The fp32 softmin on narrow rows (narrow_rows.cuh): one CTA = narrow::block_rows<float> rows
// against the key tiles of its split, each thread rows_per_thread<float>; the states leave in natural units
// (max·ln 2) to finish_row or, with split keys, to the partial states that finish_block merges —
// the same epilogue as the other softmin kernels.
//
// kPredictedReference (launched where it pays, predicted_reference_rule.hpp's narrow_prediction_pays, or when
// FLASHSINKHORN_NARROW_REFERENCE=predicted, kernel_variant.hpp): instead of an online maximum each row's reference is the LSE its previous
// potential implies, and −reference/c rides in the dot's first FMA, so a score costs d + 3
// instructions (docs/cuda_backend.md, "Next steps for the forward", item 5). A CTA in which a row's
// sum overflowed or fell under 2⁻⁶⁰ (a poor prediction, or a split of keys that hold none of the row's
// mass) folds its keys again with the online maximum. The reference sits a margin M under the
// prediction (p.reference_margin_log2, kernel_variant.hpp), which moves that window toward the
// splits' underflow: split LSEs within [pred − 60 − M, pred + 127.8 − M] pass.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/narrow_rows.cuh"
#include "cuda/softmin_kernel.cuh"

namespace flashsinkhorn::detail::kernels {

// The thread's rows over the key tiles [tile_begin, tile_end) with references predicted from the
// previous potentials (predicted_reference_log2). true with `state` set when every row of the CTA kept
// a usable sum (predicted_sum_usable); false (state untouched) otherwise. All threads of the CTA call it.
template <int kDim>
__device__ __forceinline__ bool fold_with_predicted_reference(narrow_key_tile<float, kDim, false>& tile,
                                                              const narrow_keys<float>& keys, int tile_begin,
                                                              int tile_end, const narrow_queries<float, kDim>& rows,
                                                              const softmin_params& p, std::int64_t row0,
                                                              narrow_row_states<float>& state) {
  constexpr int kRows = narrow::rows_per_thread<float>;
  using tile_t = narrow_key_tile<float, kDim, false>;
  float reference[kRows], offset[kRows], sum[kRows];  // (kRows) log₂ units; −reference/c; Σ 2^(t − reference)
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    const std::int64_t i = narrow_queries<float, kDim>::row(row0, r);
    const double predicted = i < p.rows ? predicted_reference_log2(p, i) : -p.reference_margin_log2;
    offset[r] = static_cast<float>(-predicted) / p.score_scale_log2;
    // The reference the exponents subtract is c·offset, exactly (inside the FMA); the state keeps its
    // float rounding, so the row's LSE is off by at most half a unit in its last place, as with a
    // float online maximum.
    reference[r] = -(offset[r] * p.score_scale_log2);
    sum[r] = 0.f;
  }
  for_each_narrow_tile(tile, keys, tile_begin, tile_end, [&] {
#pragma unroll 4
    for (int j = 0; j < narrow::kTileKeys; ++j) {
      float word[tile_t::kVecs * tile_t::kLanes];  // (kDim coordinates, β, zeros)
      tile.read(j, word);
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        float dot = fmaf(rows.q[r][0], word[0], offset[r]);  // p·q − reference/c
#pragma unroll
        for (int c = 1; c < kDim; ++c) dot = fmaf(rows.q[r][c], word[c], dot);
        sum[r] += fast_exp2(fmaf(dot, p.score_scale_log2, word[kDim]));  // 2^(t − reference)
      }
    }
  });
  bool usable = true;
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    const bool real_row = narrow_queries<float, kDim>::row(row0, r) < p.rows;
    if (real_row && !predicted_sum_usable(sum[r])) usable = false;
  }
  if (__syncthreads_or(usable ? 0 : 1) != 0) return false;
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    state.reference[r] = reference[r];
    state.sum[r] = sum[r];
  }
  return true;
}

template <int kDim, bool kPredictedReference = false>
__global__ void __launch_bounds__(narrow::kThreads) softmin_narrow_kernel(const softmin_params p) {
  constexpr int kRows = narrow::rows_per_thread<float>;
  __shared__ narrow_key_tile<float, kDim, false> tile;
  __shared__ double error_scratch[narrow::kThreads / 32];
  const std::int64_t row0 = static_cast<std::int64_t>(blockIdx.x) * narrow::block_rows<float>;
  narrow_queries<float, kDim> rows;
  rows.load(static_cast<const float*>(p.rows_points), p.padded_dim, p.rows_padded, row0);
  narrow_row_states<float> state;
  state.reset();
  const int split = blockIdx.y;
  const int tile_begin = split * p.tiles_per_split;
  const int tile_end = min(p.key_tiles, tile_begin + p.tiles_per_split);
  const narrow_keys<float> keys{static_cast<const float*>(p.key_points), p.padded_dim,
                                static_cast<const float*>(p.key_bias), nullptr, 0, 0};
  bool folded = false;
  if constexpr (kPredictedReference) {  // launched only with previous potentials
    folded = fold_with_predicted_reference(tile, keys, tile_begin, tile_end, rows, p, row0, state);
  }
  if (!folded) fold_narrow_keys(tile, keys, tile_begin, tile_end, rows, p.score_scale_log2, state);

  double error = 0;
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    const std::int64_t i = narrow_queries<float, kDim>::row(row0, r);
    if (i >= p.rows) continue;
    error += leave_row(p, i, split, math::lse_state<float>{state.reference[r] * kLn2f, state.sum[r]});
  }
  finish_block<float>(p, error, error_scratch, row0, narrow::block_rows<float>);
}

}  // namespace flashsinkhorn::detail::kernels
