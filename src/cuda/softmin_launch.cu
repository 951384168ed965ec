// Host launch of one softmin half-step (see softmin_launch.hpp): β, the fused kernel, and the
// split combine when the key range is split across CTAs.
#include "cuda/softmin_launch.hpp"

#include <algorithm>
#include <cmath>

#include "cuda/softmin_kernel.cuh"
#include "cuda/tile_config.hpp"

namespace flashsinkhorn::detail {
namespace {

struct kernel_shape {
  int block_m = 0;       // rows per CTA
  int block_n = 0;       // keys per tile
  int shared_bytes = 0;  // dynamic shared memory per CTA
  int ctas_per_sm = 1;   // occupancy, for the split plan
};

template <class Kernel>
cudaError_t allow_shared(Kernel kernel, int bytes) {
  if (bytes <= 48 * 1024) return cudaSuccess;
  return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
}

// CTAs per SM of `kernel` at `shared_bytes` (cached: the answer depends only on these).
template <class Kernel>
int occupancy(Kernel kernel, int threads, int shared_bytes) {
  thread_local const void* cached_kernel = nullptr;
  thread_local int cached_bytes = -1;
  thread_local int cached_device = -1;
  thread_local int cached_ctas = 1;
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return 1;
  const void* key = reinterpret_cast<const void*>(kernel);
  if (cached_kernel != key || cached_bytes != shared_bytes || cached_device != device) {
    int ctas = 1;
    if (allow_shared(kernel, shared_bytes) != cudaSuccess ||
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&ctas, kernel, threads, shared_bytes) != cudaSuccess) {
      (void)cudaGetLastError();
      ctas = 1;
    }
    cached_kernel = key;
    cached_bytes = shared_bytes;
    cached_device = device;
    cached_ctas = ctas < 1 ? 1 : ctas;
  }
  return cached_ctas;
}

template <class Op>
kernel_shape mma_shape(std::int64_t padded_dim, int max_shared_bytes) {
  const std::int64_t words = padded_dim * static_cast<std::int64_t>(sizeof(typename Op::storage)) / 4;
  const kernels::mma_geometry geo = kernels::choose_mma_geometry(words, max_shared_bytes);
  kernel_shape shape;
  shape.block_m = tile::kBlockM;
  shape.block_n = tile::kBlockN;
  shape.shared_bytes = geo.total_bytes;
  shape.ctas_per_sm = occupancy(kernels::softmin_mma_kernel<Op>, tile::kThreads, shape.shared_bytes);
  return shape;
}

kernel_shape shape_for(precision mode, std::int64_t padded_dim, int max_shared_bytes) {
  switch (mode) {
    case precision::bf16: return mma_shape<kernels::bf16_operands>(padded_dim, max_shared_bytes);
    case precision::fp32: return mma_shape<kernels::fp32_split_operands>(padded_dim, max_shared_bytes);
    case precision::tf32: return mma_shape<kernels::tf32_operands>(padded_dim, max_shared_bytes);
    case precision::fp64: break;
  }
  kernel_shape shape;
  shape.block_m = tile::kBlockM64;
  shape.block_n = tile::kBlockN64;
  shape.ctas_per_sm = occupancy(kernels::softmin_fp64_kernel, tile::kBlockM64, 0);
  return shape;
}

struct split_plan {
  int splits = 1;
  int tiles_per_split = 1;
  int key_tiles = 1;
  int row_blocks = 1;
};

// Picks the split count minimising (waves of CTAs) × (key tiles per CTA): 1,000 rows are 8 row
// blocks, so the key range is cut until the 132 SMs are busy; 50,000 rows may still gain from a
// split that rounds the last wave up.
split_plan plan_splits(const kernel_shape& shape, std::int64_t rows, std::int64_t keys, int sm_count) {
  split_plan plan;
  plan.row_blocks = static_cast<int>(std::max<std::int64_t>(1, (rows + shape.block_m - 1) / shape.block_m));
  plan.key_tiles = static_cast<int>(std::max<std::int64_t>(1, (keys + shape.block_n - 1) / shape.block_n));
  const std::int64_t slots = static_cast<std::int64_t>(std::max(1, sm_count)) * shape.ctas_per_sm;
  auto cost = [&](int tiles_per_split, int splits) {
    const std::int64_t ctas = static_cast<std::int64_t>(plan.row_blocks) * splits;
    const std::int64_t waves = (ctas + slots - 1) / slots;
    // + 1 tile: the fixed cost of a CTA (query load, epilogue, partial write).
    return static_cast<double>(waves) * (tiles_per_split + 1);
  };
  plan.splits = 1;
  plan.tiles_per_split = plan.key_tiles;
  double best = cost(plan.key_tiles, 1);
  for (int wanted = 2; wanted <= tile::kMaxSplits; ++wanted) {
    if (plan.key_tiles < wanted * tile::kMinTilesPerSplit) break;
    const int tiles_per_split = (plan.key_tiles + wanted - 1) / wanted;
    const int splits = (plan.key_tiles + tiles_per_split - 1) / tiles_per_split;
    const double c = cost(tiles_per_split, splits);
    if (c < 0.97 * best) {
      best = c;
      plan.splits = splits;
      plan.tiles_per_split = tiles_per_split;
    }
  }
  return plan;
}

}  // namespace

int softmin_split_count(precision mode, const device_cloud_view& rows, const device_cloud_view& keys,
                        int sm_count, int max_shared_bytes) {
  const kernel_shape shape = shape_for(mode, rows.padded_dim, max_shared_bytes);
  return plan_splits(shape, rows.count, keys.count, sm_count).splits;
}

std::int64_t softmin_partial_bytes(precision mode, std::int64_t padded_rows, int splits) {
  if (splits <= 1) return 0;
  const std::int64_t state_bytes = mode == precision::fp64 ? 16 : 8;
  return state_bytes * padded_rows * splits;
}

cudaError_t launch_softmin(precision mode, const softmin_launch_args& args, cudaStream_t stream) {
  const device_cloud_view& rows = args.rows;
  const device_cloud_view& keys = args.keys;
  if (rows.count <= 0 || keys.count <= 0) return cudaErrorInvalidValue;
  if (rows.padded_dim != keys.padded_dim) return cudaErrorInvalidValue;
  const kernel_shape shape = shape_for(mode, rows.padded_dim, args.max_shared_bytes);
  if (shape.shared_bytes > args.max_shared_bytes) return cudaErrorInvalidConfiguration;
  const split_plan plan = plan_splits(shape, rows.count, keys.count, args.sm_count);
  if (softmin_partial_bytes(mode, rows.padded_count, plan.splits) > args.partial_scratch_capacity)
    return cudaErrorInvalidValue;

  kernels::softmin_params p{};
  p.rows_points = rows.points;
  p.key_points = keys.points;
  p.key_bias = args.bias_scratch;
  p.row_scaled_sq_norm = rows.scaled_sq_norm;
  p.row_weights = rows.weights;
  p.previous = args.previous;
  p.out = args.out;
  p.error = args.error;
  p.partial = args.partial_scratch;
  p.rows = rows.count;
  p.rows_padded = rows.padded_count;
  p.padded_dim = rows.padded_dim;
  p.dim = rows.dim;
  p.key_tiles = plan.key_tiles;
  p.tiles_per_split = plan.tiles_per_split;
  p.splits = plan.splits;
  p.score_scale = 2.0 * args.cost_scale / args.eps;
  p.score_scale_log2 = static_cast<float>(p.score_scale * 1.44269504088896340736);
  p.eps = args.eps;
  p.damping = args.damping;
  p.blend = args.blend;
  p.accumulate_error = args.accumulate_error ? 1 : 0;
  p.max_shared_bytes = args.max_shared_bytes;

  // 1. β_j
  constexpr int kBiasThreads = 256;
  const auto bias_blocks = static_cast<unsigned>((keys.padded_count + kBiasThreads - 1) / kBiasThreads);
  if (mode == precision::fp64) {
    kernels::key_bias_kernel<double><<<bias_blocks, kBiasThreads, 0, stream>>>(
        static_cast<double*>(args.bias_scratch), args.key_potential, keys.log_weights,
        keys.scaled_sq_norm, keys.count, keys.padded_count, args.eps);
  } else {
    kernels::key_bias_kernel<float><<<bias_blocks, kBiasThreads, 0, stream>>>(
        static_cast<float*>(args.bias_scratch), args.key_potential, keys.log_weights,
        keys.scaled_sq_norm, keys.count, keys.padded_count, args.eps);
  }
  cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess) return status;

  // 2. the fused kernel
  const dim3 grid(static_cast<unsigned>(plan.row_blocks), static_cast<unsigned>(plan.splits));
  auto launch_mma = [&](auto kernel) {
    cudaError_t s = allow_shared(kernel, shape.shared_bytes);
    if (s != cudaSuccess) return s;
    kernel<<<grid, tile::kThreads, shape.shared_bytes, stream>>>(p);
    return cudaGetLastError();
  };
  switch (mode) {
    case precision::tf32: status = launch_mma(kernels::softmin_mma_kernel<kernels::tf32_operands>); break;
    case precision::fp32: status = launch_mma(kernels::softmin_mma_kernel<kernels::fp32_split_operands>); break;
    case precision::bf16: status = launch_mma(kernels::softmin_mma_kernel<kernels::bf16_operands>); break;
    case precision::fp64:
      kernels::softmin_fp64_kernel<<<grid, tile::kBlockM64, 0, stream>>>(p);
      status = cudaGetLastError();
      break;
  }
  if (status != cudaSuccess || plan.splits == 1) return status;

  // 3. combine the splits and finish the rows
  constexpr int kCombineThreads = 256;
  const auto combine_blocks = static_cast<unsigned>((rows.count + kCombineThreads - 1) / kCombineThreads);
  if (mode == precision::fp64)
    kernels::softmin_combine_kernel<double><<<combine_blocks, kCombineThreads, 0, stream>>>(p);
  else
    kernels::softmin_combine_kernel<float><<<combine_blocks, kCombineThreads, 0, stream>>>(p);
  return cudaGetLastError();
}

}  // namespace flashsinkhorn::detail
