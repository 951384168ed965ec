// The fp64 softmin kernel: one row per thread, float64 dot products by FMA on the CUDA cores,
// scores and the LSE state in natural units. (The fp32 mode's FMA-dot path on narrow rows is
// softmin_narrow_kernel.cuh.)
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "cuda/softmin_kernel.cuh"

namespace flashsinkhorn::detail::kernels {

__global__ void __launch_bounds__(tile::kBlockM64) softmin_simt_kernel(const softmin_params p) {
  using T = double;
  __shared__ T keys[tile::kBlockN64][tile::kChunk64 + 1];  // (kBlockN64, kChunk64)
  __shared__ T bias[tile::kBlockN64];
  __shared__ double error_scratch[tile::kBlockM64 / 32];

  const T* rows_points = static_cast<const T*>(p.rows_points);
  const T* key_points = static_cast<const T*>(p.key_points);
  const T* key_bias = static_cast<const T*>(p.key_bias);
  const T scale = p.score_scale;
  const std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * tile::kBlockM64 + threadIdx.x;
  const T* query = rows_points + row * p.padded_dim;  // row < rows_padded always
  const int split = blockIdx.y;
  const int tile_begin = split * p.tiles_per_split;
  const int tile_end = min(p.key_tiles, tile_begin + p.tiles_per_split);

  math::lse_state<T> state = math::lse_state<T>::identity();
  for (int key_tile = tile_begin; key_tile < tile_end; ++key_tile) {
    const std::int64_t key0 = static_cast<std::int64_t>(key_tile) * tile::kBlockN64;
    T dot[tile::kBlockN64];
#pragma unroll
    for (int j = 0; j < tile::kBlockN64; ++j) dot[j] = 0;
    for (std::int64_t col0 = 0; col0 < p.dim; col0 += tile::kChunk64) {
      const int width = static_cast<int>(min64(tile::kChunk64, p.dim - col0));
      __syncthreads();
      for (int idx = threadIdx.x; idx < tile::kBlockN64 * tile::kChunk64; idx += blockDim.x) {
        const int j = idx / tile::kChunk64;
        const int k = idx % tile::kChunk64;
        keys[j][k] = k < width ? key_points[(key0 + j) * p.padded_dim + col0 + k] : T(0);
      }
      if (threadIdx.x < tile::kBlockN64) bias[threadIdx.x] = key_bias[key0 + threadIdx.x];
      __syncthreads();
      for (int k = 0; k < width; ++k) {
        const T q = query[col0 + k];
#pragma unroll
        for (int j = 0; j < tile::kBlockN64; ++j) dot[j] = fma(q, keys[j][k], dot[j]);
      }
    }
    T tile_max = -INFINITY;
#pragma unroll
    for (int j = 0; j < tile::kBlockN64; ++j) {
      dot[j] = fma(dot[j], scale, bias[j]);
      tile_max = fmax(tile_max, dot[j]);
    }
    T tile_sum = 0;
    if (tile_max != -INFINITY) {
#pragma unroll
      for (int j = 0; j < tile::kBlockN64; ++j) tile_sum += exp(dot[j] - tile_max);
    }
    state = math::combine_block(state, tile_max, tile_sum);
  }

  double error = 0;
  if (row < p.rows) {
    if (p.splits == 1)
      error = finish_row(p, row, static_cast<double>(state.max) + log(static_cast<double>(state.sum)));
    else
      static_cast<math::lse_state<T>*>(p.partial)[split * p.rows_padded + row] = state;
  }
  finish_block<T>(p, error, error_scratch, static_cast<std::int64_t>(blockIdx.x) * tile::kBlockM64,
                  tile::kBlockM64);
}

}  // namespace flashsinkhorn::detail::kernels
