// Host launch of the fp32 one-column plan pass on narrow rows (plan_vector_narrow_launch.hpp).
#include "cuda/plan_vector_narrow_launch.hpp"

#include "cuda/kernel_occupancy.hpp"
#include "cuda/kernel_variant.hpp"
#include "cuda/key_splits.hpp"
#include "cuda/narrow_dims.hpp"
#include "cuda/plan_mma_kernel.cuh"
#include "cuda/plan_vector_narrow_kernel.cuh"
#include "cuda/tile_config.hpp"

namespace flashsinkhorn::detail {
namespace {

namespace narrow = kernels::narrow;

auto kernel_for(std::int64_t dim) {
  return for_narrow_dim(dim, [](auto d) { return &kernels::plan_vector_narrow_kernel<decltype(d)::value>; });
}

split_plan plan_splits(const device_cloud_view& rows, const device_cloud_view& keys, int sm_count) {
  const int ctas_per_sm = occupancy(kernel_for(rows.dim), narrow::kThreads, 0);
  return plan_key_splits((rows.count + narrow::kBlockRows - 1) / narrow::kBlockRows,
                         (keys.count + narrow::kTileKeys - 1) / narrow::kTileKeys,
                         static_cast<std::int64_t>(sm_count) * ctas_per_sm, tile::kMaxSplits, tile::kMinTilesPerSplit);
}

}  // namespace

bool plan_vector_narrow_applies(precision mode, const plan_rows_launch_args& args) {
  return mode == precision::fp32 && fp32_fma_dots_for(args.rows.padded_dim) && args.row_potential != nullptr &&
         args.k <= 1 && args.cost == nullptr &&
         args.directions == nullptr && args.key_directions == nullptr && args.stored_directions == nullptr &&
         args.stored_key_directions == nullptr;
}

std::int64_t plan_vector_narrow_partial_bytes(const device_cloud_view& rows, const device_cloud_view& keys,
                                              int sm_count) {
  return kernels::plan_vector_partial_bytes_of(rows.padded_count, plan_splits(rows, keys, sm_count).splits);
}

bool launch_plan_vector_narrow(precision mode, const plan_rows_launch_args& args, cudaStream_t stream,
                               cudaError_t& status) {
  if (!plan_vector_narrow_applies(mode, args)) return false;
  const device_cloud_view& rows = args.rows;
  const device_cloud_view& keys = args.keys;
  kernels::plan_mma_params p{};
  p.rows_points = rows.points;
  p.key_points = keys.points;
  p.key_bias = args.bias_scratch;
  p.values_t = args.k == 1 ? args.values_scratch : nullptr;  // k = 0: the LSE-only pass
  p.row_scaled_sq_norm = rows.scaled_sq_norm;
  p.row_potential = args.row_potential;
  p.row_log_weights = rows.log_weights;
  p.lse = args.lse;
  p.weighted = args.k == 1 ? args.weighted : nullptr;
  p.rows = rows.count;
  p.keys = keys.count;
  p.keys_padded = keys.padded_count;
  p.padded_words = rows.padded_dim;
  p.k = args.k;
  p.score_scale_log2 = static_cast<float>(2.0 * args.cost_scale / args.eps * 1.44269504088896340736);
  p.eps = args.eps;
  p.rows_padded = rows.padded_count;
  split_plan splits = plan_splits(rows, keys, args.sm_count);
  if (kernels::plan_vector_partial_bytes_of(rows.padded_count, splits.splits) > args.partial_scratch_capacity) {
    splits.splits = 1;  // too little scratch for the partial states
    splits.tiles_per_split = splits.key_tiles;
  }
  if (splits.splits > 1) p.partials = static_cast<kernels::plan_vector_partial*>(args.partial_scratch);
  p.tiles_per_split = splits.tiles_per_split;
  const dim3 grid(static_cast<unsigned>(splits.row_blocks), static_cast<unsigned>(splits.splits));
  kernel_for(rows.dim)<<<grid, narrow::kThreads, 0, stream>>>(p);
  status = cudaGetLastError();
  if (status != cudaSuccess || splits.splits <= 1) return true;
  constexpr int kCombineThreads = 256;
  kernels::plan_vector_combine_kernel<><<<static_cast<unsigned>((rows.count + kCombineThreads - 1) / kCombineThreads),
                                        kCombineThreads, 0, stream>>>(p, splits.splits);
  status = cudaGetLastError();
  return true;
}

}  // namespace flashsinkhorn::detail
