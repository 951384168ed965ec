// The fp32 softmin on narrow rows (narrow_rows.cuh): one CTA = narrow::block_rows<float> rows
// against the key tiles of its split, each thread rows_per_thread<float>; the states leave in natural units
// (max·ln 2) to finish_row or, with split keys, to the partial states that finish_block merges —
// the same epilogue as the other softmin kernels.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/narrow_rows.cuh"
#include "cuda/softmin_kernel.cuh"

namespace flashsinkhorn::detail::kernels {

template <int kDim>
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
  fold_narrow_keys(tile, keys, tile_begin, tile_end, rows, p.score_scale_log2, state);

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
