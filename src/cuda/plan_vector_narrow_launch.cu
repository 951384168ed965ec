// Host launch of the float64 one-column plan pass on narrow rows (plan_vector_narrow_launch.hpp).
#include "cuda/plan_vector_narrow_launch.hpp"

#include "cuda/kernel_variant.hpp"
#include "cuda/narrow_dims.hpp"
#include "cuda/narrow_split_launch.cuh"
#include "cuda/plan_vector_narrow_kernel.cuh"
#include "cuda/softmin_kernel.cuh"

namespace flashsinkhorn::detail {
namespace {

namespace narrow = kernels::narrow;
constexpr int kElementThreads = 256;

// The instance for rows of `dim` coordinates with this process's exponential (kernel_variant.hpp,
// fp32_pass_exp_by_ex2).
auto kernel_for(std::int64_t dim) {
  return for_narrow_dim(dim, [](auto d) {
    constexpr int kDim = decltype(d)::value;
    return fp32_pass_exp_by_ex2() ? &kernels::plan_vector_narrow_kernel<kDim, true>
                                  : &kernels::plan_vector_narrow_kernel<kDim, false>;
  });
}

split_plan plan_splits(const device_cloud_view& rows, const device_cloud_view& keys, int sm_count) {
  return plan_narrow_splits(kernel_for(rows.dim), narrow::block_rows<double>, rows.count, keys.count, sm_count);
}

std::int64_t partial_bytes(std::int64_t rows_padded, int splits) {
  return kernels::plan_vector_partial_bytes_of<kernels::narrow_vector_partial>(rows_padded, splits);
}

}  // namespace

bool plan_vector_narrow_applies(precision mode, const plan_rows_launch_args& args) {
  return mode == precision::fp32 && fp32_fma_dots_for(args.rows.padded_dim) && !args.values_staged && args.k <= 1 &&
         args.cost == nullptr && args.directions == nullptr && args.key_directions == nullptr &&
         args.stored_directions == nullptr && args.stored_key_directions == nullptr;
}

std::int64_t plan_vector_narrow_partial_bytes(const device_cloud_view& rows, const device_cloud_view& keys,
                                              int sm_count) {
  return partial_bytes(rows.padded_count, plan_splits(rows, keys, sm_count).splits);
}

bool launch_plan_vector_narrow(precision mode, const plan_rows_launch_args& args, cudaStream_t stream,
                               cudaError_t& status) {
  if (!plan_vector_narrow_applies(mode, args)) return false;
  const device_cloud_view& rows = args.rows;
  const device_cloud_view& keys = args.keys;
  auto* bias = reinterpret_cast<double*>(args.bias_scratch);
  kernels::key_bias_kernel<double><<<static_cast<unsigned>((keys.padded_count + kElementThreads - 1) / kElementThreads),
                                     kElementThreads, 0, stream>>>(bias, args.key_potential, keys.log_weights,
                                                                   keys.scaled_sq_norm, keys.count,
                                                                   keys.padded_count, args.eps);
  status = cudaGetLastError();
  if (status != cudaSuccess) return true;

  kernels::plan_vector_narrow_params p{};
  p.rows_points = static_cast<const float*>(rows.points);
  p.keys = {static_cast<const float*>(keys.points), keys.padded_dim, bias, args.k == 1 ? args.values : nullptr,
            args.values_stride > 0 ? args.values_stride : 1, keys.count};
  p.row_scaled_sq_norm = rows.scaled_sq_norm;
  p.lse = args.lse;
  p.weighted = args.k == 1 ? args.weighted : nullptr;
  p.rows = rows.count;
  p.rows_padded = rows.padded_count;
  p.score_scale = 2.0 * args.cost_scale / args.eps;
  p.eps = args.eps;
  const split_plan splits =
      fit_splits_to_scratch(plan_splits(rows, keys, args.sm_count), args.partial_scratch_capacity,
                            [&](int count) { return partial_bytes(rows.padded_count, count); });
  p.key_tiles = splits.key_tiles;
  p.tiles_per_split = splits.tiles_per_split;
  if (splits.splits > 1) p.partials = static_cast<kernels::narrow_vector_partial*>(args.partial_scratch);
  status = launch_narrow_with_splits(kernel_for(rows.dim), &kernels::plan_vector_narrow_combine_kernel, p, splits,
                                     rows.count, stream);
  return true;
}

}  // namespace flashsinkhorn::detail
