// The launch shared by the narrow plan passes with split keys (plan_vector_narrow_launch.cu,
// plan_points_narrow_launch.cu): the split plan, the pass over row blocks × key splits, then, when the
// keys split, its combine kernel, one thread per row, merging the splits' partial states.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/kernel_occupancy.hpp"
#include "cuda/key_splits.hpp"
#include "cuda/narrow_rows.cuh"
#include "cuda/tile_config.hpp"

namespace flashsinkhorn::detail {

// The key splits (key_splits.hpp) of `kernel`, block_rows rows a CTA, over narrow::kTileKeys-key
// tiles: as many CTAs of it as fit on an SM.
template <class Params>
split_plan plan_narrow_splits(void (*kernel)(Params), int block_rows, std::int64_t rows, std::int64_t keys,
                              int sm_count) {
  const int ctas_per_sm = occupancy(kernel, kernels::narrow::kThreads, 0);
  return plan_key_splits((rows + block_rows - 1) / block_rows,
                         (keys + kernels::narrow::kTileKeys - 1) / kernels::narrow::kTileKeys,
                         static_cast<std::int64_t>(sm_count) * ctas_per_sm, tile::kMaxSplits, tile::kMinTilesPerSplit);
}

// `pass` on the grid of `splits` (its params holding the splits' tiles and partials), then `combine`
// when there is more than one split. The first failing launch's status.
template <class Params>
cudaError_t launch_narrow_with_splits(void (*pass)(Params), void (*combine)(Params, int), const Params& p,
                                      const split_plan& splits, std::int64_t rows, cudaStream_t stream) {
  constexpr int kCombineThreads = 256;
  const dim3 grid(static_cast<unsigned>(splits.row_blocks), static_cast<unsigned>(splits.splits));
  pass<<<grid, kernels::narrow::kThreads, 0, stream>>>(p);
  cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess || splits.splits <= 1) return status;
  combine<<<static_cast<unsigned>((rows + kCombineThreads - 1) / kCombineThreads), kCombineThreads, 0, stream>>>(
      p, splits.splits);
  return cudaGetLastError();
}

}  // namespace flashsinkhorn::detail
