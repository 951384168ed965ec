// Host launch of the fp32 point-gradient pass on narrow rows (plan_points_narrow_launch.hpp).
#include "cuda/plan_points_narrow_launch.hpp"

#include <cstdlib>

#include "core/named_setting.hpp"
#include "cuda/kernel_variant.hpp"
#include "cuda/narrow_dims.hpp"
#include "cuda/narrow_split_launch.cuh"
#include "cuda/plan_points_narrow_kernel.cuh"
#include "cuda/softmin_kernel.cuh"
#include "cuda/tile_config.hpp"

namespace flashsinkhorn::detail {
namespace {

namespace narrow = kernels::narrow;
constexpr int kElementThreads = 256;

auto kernel_for(std::int64_t dim) {
  return for_narrow_dim(dim, [](auto d) { return &kernels::plan_points_narrow_kernel<decltype(d)::value>; });
}

int block_rows_for(std::int64_t dim) {
  return for_narrow_dim(dim, [](auto d) { return kernels::narrow_points::block_rows<decltype(d)::value>; });
}

split_plan plan_splits(const device_cloud_view& rows, const device_cloud_view& keys, int sm_count) {
  return plan_narrow_splits(kernel_for(rows.dim), block_rows_for(rows.dim), rows.count, keys.count, sm_count);
}

std::int64_t partial_bytes(std::int64_t rows_padded, std::int64_t k, int splits) {
  return splits <= 1 ? 0 : static_cast<std::int64_t>(splits) * rows_padded * (2 + k) * 8;
}

}  // namespace

bool parse_point_gradient_pass(const char* name) {
  constexpr named_choice<bool> kPasses[] = {{"narrow", true}, {"tensor", false}};
  return parse_named_setting(name, "FLASHSINKHORN_POINT_GRADIENT", kPasses, true);
}

bool plan_points_narrow_applies(precision mode, std::int64_t padded_dim, std::int64_t dim) {
  static const bool chosen = parse_point_gradient_pass(std::getenv("FLASHSINKHORN_POINT_GRADIENT"));  // read once
  return chosen && mode == precision::fp32 && fp32_fma_dots_for(padded_dim) && dim >= 1 &&
         dim <= tile::kSimtFp32MaxDim;
}

std::int64_t plan_points_narrow_partial_bytes(const device_cloud_view& rows, const device_cloud_view& keys,
                                              int sm_count) {
  return partial_bytes(rows.padded_count, rows.dim, plan_splits(rows, keys, sm_count).splits);
}

bool launch_plan_points_narrow(precision mode, const plan_rows_launch_args& args, cudaStream_t stream,
                               cudaError_t& status) {
  const device_cloud_view& rows = args.rows;
  const device_cloud_view& keys = args.keys;
  if (!args.values_are_key_points || !plan_points_narrow_applies(mode, rows.padded_dim, rows.dim) ||
      args.k != rows.dim || args.weighted == nullptr || args.cost != nullptr)
    return false;
  auto* bias = args.bias_scratch;  // β in log₂ units, 4 of the buffer's 8 bytes a key
  kernels::key_bias_kernel<float><<<static_cast<unsigned>((keys.padded_count + kElementThreads - 1) / kElementThreads),
                                    kElementThreads, 0, stream>>>(bias, args.key_potential, keys.log_weights,
                                                                  keys.scaled_sq_norm, keys.count, keys.padded_count,
                                                                  args.eps);
  status = cudaGetLastError();
  if (status != cudaSuccess) return true;

  kernels::plan_points_narrow_params p{};
  p.rows_points = static_cast<const float*>(rows.points);
  p.key_points = static_cast<const float*>(keys.points);
  p.key_bias = bias;
  p.row_scaled_sq_norm = rows.scaled_sq_norm;
  p.lse = args.lse;
  p.weighted = args.weighted;
  p.rows = rows.count;
  p.rows_padded = rows.padded_count;
  p.padded_dim = rows.padded_dim;
  p.k = static_cast<int>(rows.dim);
  p.score_scale_log2 = static_cast<float>(2.0 * args.cost_scale / args.eps * 1.44269504088896340736);
  p.eps = args.eps;
  const split_plan splits =
      fit_splits_to_scratch(plan_splits(rows, keys, args.sm_count), args.partial_scratch_capacity,
                            [&](int count) { return partial_bytes(rows.padded_count, rows.dim, count); });
  p.key_tiles = splits.key_tiles;
  p.tiles_per_split = splits.tiles_per_split;
  if (splits.splits > 1) p.partials = static_cast<double*>(args.partial_scratch);
  status = launch_narrow_with_splits(kernel_for(rows.dim), &kernels::plan_points_narrow_combine_kernel, p, splits,
                                     rows.count, stream);
  return true;
}

}  // namespace flashsinkhorn::detail
