// The fp64 softmin kernel (the fp64 mode: float64 FMA, one row per thread), beside the
// tensor-core kernels of softmin_kernel.cuh. A separate header: it is not a template, so exactly one
// translation unit (softmin_launch.cu) may define it.
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "cuda/softmin_kernel.cuh"

namespace flashsinkhorn::detail::kernels {


__global__ void __launch_bounds__(tile::kBlockM64) softmin_fp64_kernel(const softmin_params p) {
  __shared__ double keys[tile::kBlockN64][tile::kChunk64 + 1];  // (kBlockN64, kChunk64)
  __shared__ double bias[tile::kBlockN64];
  __shared__ double error_scratch[tile::kBlockM64 / 32];

  const double* rows_points = static_cast<const double*>(p.rows_points);
  const double* key_points = static_cast<const double*>(p.key_points);
  const double* key_bias = static_cast<const double*>(p.key_bias);
  const std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * tile::kBlockM64 + threadIdx.x;
  const double* query = rows_points + row * p.padded_dim;  // row < rows_padded always
  const int split = blockIdx.y;
  const int tile_begin = split * p.tiles_per_split;
  const int tile_end = min(p.key_tiles, tile_begin + p.tiles_per_split);

  math::lse_state<double> state = math::lse_state<double>::identity();
  for (int key_tile = tile_begin; key_tile < tile_end; ++key_tile) {
    const std::int64_t key0 = static_cast<std::int64_t>(key_tile) * tile::kBlockN64;
    double dot[tile::kBlockN64];
#pragma unroll
    for (int j = 0; j < tile::kBlockN64; ++j) dot[j] = 0;
    for (std::int64_t col0 = 0; col0 < p.dim; col0 += tile::kChunk64) {
      const int width = static_cast<int>(min64(tile::kChunk64, p.dim - col0));
      __syncthreads();
      for (int idx = threadIdx.x; idx < tile::kBlockN64 * tile::kChunk64; idx += blockDim.x) {
        const int j = idx / tile::kChunk64;
        const int k = idx % tile::kChunk64;
        keys[j][k] = k < width ? key_points[(key0 + j) * p.padded_dim + col0 + k] : 0.0;
      }
      if (threadIdx.x < tile::kBlockN64) bias[threadIdx.x] = key_bias[key0 + threadIdx.x];
      __syncthreads();
      for (int k = 0; k < width; ++k) {
        const double q = query[col0 + k];
#pragma unroll
        for (int j = 0; j < tile::kBlockN64; ++j) dot[j] = fma(q, keys[j][k], dot[j]);
      }
    }
    double tile_max = -INFINITY;
#pragma unroll
    for (int j = 0; j < tile::kBlockN64; ++j) {
      dot[j] = fma(dot[j], p.score_scale, bias[j]);
      tile_max = fmax(tile_max, dot[j]);
    }
    double tile_sum = 0;
    if (tile_max != -INFINITY) {
#pragma unroll
      for (int j = 0; j < tile::kBlockN64; ++j) tile_sum += exp(dot[j] - tile_max);
    }
    state = math::combine_block(state, tile_max, tile_sum);
  }

  double error = 0;
  if (row < p.rows) {
    if (p.splits == 1)
      error = finish_row(p, row, state.value());
    else
      static_cast<math::lse_state<double>*>(p.partial)[split * p.rows_padded + row] = state;
  }
  finish_block<double>(p, error, error_scratch, static_cast<std::int64_t>(blockIdx.x) * tile::kBlockM64,
                       tile::kBlockM64);
}

}  // namespace flashsinkhorn::detail::kernels
