// The column statistics of the device preparation (device_prepare.cu): per cloud and coordinate c,
// the weighted sum Σ_i w_i p_ic and the range [min_i p_ic, max_i p_ic], read straight from the
// caller's view; then the joint mean μ_c = ½(Σ_x w p/Σw_x + Σ_y w p/Σw_y) (the centring) and the
// bounding box's diagonal √Σ_c (max_c − min_c)² over both clouds. Three launches: partials, finish
// (a warp per coordinate), diameter (one CTA).
//
// Layout: a CTA takes a chunk of rows and `columns` adjacent coordinates (the power of two ≥ d, at
// most the CTA), its threads split into `columns` column lanes × (threads/columns) row lanes, so a
// warp reads whole stretches of rows (coalesced for every d) and each thread sums one coordinate
// over every (threads/columns)-th row of the chunk. The row lanes meet in shared memory in a fixed
// order: the statistics are deterministic for a given shape. Reading every value, the pass also
// finds the first non-finite one (flat index r·d + c), the preparation's check of the points.
#pragma once

#include <math_constants.h>

#include <algorithm>
#include <cstdint>
#include <cub/block/block_reduce.cuh>

#include "cuda/caller_views.cuh"

namespace flashsinkhorn::detail::column_statistics {

constexpr int kThreads = 256;
constexpr int kMostChunks = 128;  // most row chunks per cloud

// Coordinates per CTA: the power of two ≥ dim, at most kThreads.
inline int columns_per_cta(std::int64_t dim) {
  int columns = 1;
  while (columns < kThreads && columns < dim) columns *= 2;
  return columns;
}

// Row chunks of `rows` points: at least 8 rows per row lane, at most kMostChunks.
inline int chunks_for(std::int64_t rows, std::int64_t dim) {
  const std::int64_t row_lanes = kThreads / columns_per_cta(dim);
  const std::int64_t wanted = (rows + 8 * row_lanes - 1) / (8 * row_lanes);
  return static_cast<int>(std::clamp<std::int64_t>(wanted, 1, kMostChunks));
}

struct sources {
  per_cloud<matrix_source> points;
  per_cloud<const double*> weights;  // as read (Σw need not be 1: the finish divides by it)
  per_cloud<int> chunks;
  per_cloud<double*> partials;                      // (d, chunks, 3) per cloud
  per_cloud<unsigned long long*> first_nonfinite;  // atomicMin of flat indices r·d + c
};

// Per (chunk, coordinate, cloud): Σ w_i p_ic, min_i p_ic, max_i p_ic over the chunk's rows into
// partials[s][(c·chunks[s] + chunk)·3 + {0, 1, 2}]. Grid (most chunks, ⌈d/columns⌉, 2), kThreads.
__global__ void __launch_bounds__(kThreads) partials_kernel(const sources in, int columns) {
  __shared__ double lanes[3][kThreads];
  const int s = static_cast<int>(blockIdx.z);
  const int chunks = in.chunks.side[s];
  if (static_cast<int>(blockIdx.x) >= chunks) return;  // (the whole CTA: the other cloud has more chunks)
  const matrix_source& points = in.points.side[s];
  const double* weights = in.weights.side[s];
  const int row_lanes = kThreads / columns;
  const int row_lane = static_cast<int>(threadIdx.x) / columns;
  const std::int64_t column = static_cast<std::int64_t>(blockIdx.y) * columns + threadIdx.x % columns;
  const std::int64_t chunk = (points.rows + chunks - 1) / chunks;
  const std::int64_t begin = blockIdx.x * chunk;
  const std::int64_t end = min(points.rows, begin + chunk);
  double weighted = 0, lo = CUDART_INF, hi = -CUDART_INF;
  if (column < points.cols) {
    for (std::int64_t i = begin + row_lane; i < end; i += row_lanes) {
      const double v = points.at(i, column);
      if (!isfinite(v))
        atomicMin(in.first_nonfinite.side[s], static_cast<unsigned long long>(i * points.cols + column));
      weighted += weights[i] * v;
      lo = fmin(lo, v);
      hi = fmax(hi, v);
    }
  }
  lanes[0][threadIdx.x] = weighted;
  lanes[1][threadIdx.x] = lo;
  lanes[2][threadIdx.x] = hi;
  __syncthreads();
  if (row_lane != 0 || column >= points.cols) return;
  for (int k = 1; k < row_lanes; ++k) {
    const int t = static_cast<int>(threadIdx.x) + k * columns;
    weighted += lanes[0][t];
    lo = fmin(lo, lanes[1][t]);
    hi = fmax(hi, lanes[2][t]);
  }
  double* out = in.partials.side[s] + (column * chunks + blockIdx.x) * 3;
  out[0] = weighted;
  out[1] = lo;
  out[2] = hi;
}

// From both clouds' partials (chunks_x and chunks_y row chunks per coordinate) and their weight
// sums Σw (device scalars): μ_c = ½(Σ_x w p/Σw_x + Σ_y w p/Σw_y) into mean[c] and (max_c − min_c)²
// over both clouds into range_sq[c]. A warp per coordinate, its lanes striding the chunks, then a
// shuffle tree (a fixed order). Grid ⌈d/kWarps⌉, kThreads.
constexpr int kWarps = kThreads / 32;
__global__ void __launch_bounds__(kThreads)
    finish_kernel(const double* partials_x, int chunks_x, const double* partials_y, int chunks_y,
                  const double* weight_sum_x, const double* weight_sum_y, std::int64_t dim, double* mean,
                  double* range_sq) {
  const std::int64_t c = static_cast<std::int64_t>(blockIdx.x) * kWarps + threadIdx.x / 32;
  const int lane = static_cast<int>(threadIdx.x % 32);
  if (c >= dim) return;  // (a whole warp)
  double sum_x = 0, sum_y = 0, lo = CUDART_INF, hi = -CUDART_INF;
  for (int k = lane; k < chunks_x; k += 32) {
    const double* px = partials_x + (c * chunks_x + k) * 3;
    sum_x += px[0];
    lo = fmin(lo, px[1]);
    hi = fmax(hi, px[2]);
  }
  for (int k = lane; k < chunks_y; k += 32) {
    const double* py = partials_y + (c * chunks_y + k) * 3;
    sum_y += py[0];
    lo = fmin(lo, py[1]);
    hi = fmax(hi, py[2]);
  }
  for (int offset = 16; offset > 0; offset /= 2) {
    sum_x += __shfl_xor_sync(0xffffffffu, sum_x, offset);
    sum_y += __shfl_xor_sync(0xffffffffu, sum_y, offset);
    lo = fmin(lo, __shfl_xor_sync(0xffffffffu, lo, offset));
    hi = fmax(hi, __shfl_xor_sync(0xffffffffu, hi, offset));
  }
  if (lane != 0) return;
  mean[c] = 0.5 * (sum_x / *weight_sum_x + sum_y / *weight_sum_y);
  range_sq[c] = (hi - lo) * (hi - lo);
}

// *diameter ← √Σ_c range_sq[c], the joint bounding box's diagonal. One CTA of kThreads.
__global__ void __launch_bounds__(kThreads) diameter_kernel(const double* range_sq, std::int64_t dim, double* diameter) {
  using block_reduce = cub::BlockReduce<double, kThreads>;
  __shared__ typename block_reduce::TempStorage storage;
  double sum = 0;
  for (std::int64_t c = threadIdx.x; c < dim; c += kThreads) sum += range_sq[c];
  const double total = block_reduce(storage).Sum(sum);
  if (threadIdx.x == 0) *diameter = sqrt(total);
}

}  // namespace flashsinkhorn::detail::column_statistics
