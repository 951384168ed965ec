// Host launch of the plan pass (plan_rows_launch.hpp).
#include "cuda/plan_rows_launch.hpp"

#include "cuda/plan_mma_kernel.cuh"
#include "cuda/plan_rows_kernel.cuh"
#include "cuda/plan_values_kernel.cuh"
#include "cuda/softmin_kernel.cuh"

namespace flashsinkhorn::detail {
namespace {

constexpr int kElementwiseThreads = 256;

unsigned blocks_for(std::int64_t count) {
  return static_cast<unsigned>((count + kElementwiseThreads - 1) / kElementwiseThreads);
}

std::int64_t value_columns_padded(std::int64_t k) {
  return (k + kernels::plan_tile::kValueCols - 1) / kernels::plan_tile::kValueCols * kernels::plan_tile::kValueCols;
}

cudaError_t launch_plan_fp64(const plan_rows_launch_args& args, cudaStream_t stream) {
  kernels::plan_rows_params p{};
  p.rows_points = args.rows.points;
  p.key_points = args.keys.points;
  p.row_scaled_sq_norm = args.rows.scaled_sq_norm;
  p.key_scaled_sq_norm = args.keys.scaled_sq_norm;
  p.key_log_weights = args.keys.log_weights;
  p.key_potential = args.key_potential;
  p.values = args.values;
  p.values_stride = args.values_stride > 0 ? args.values_stride : args.k;
  p.lse = args.lse;
  p.weighted = args.k > 0 ? args.weighted : nullptr;
  p.cost = args.cost;
  p.rows = args.rows.count;
  p.keys = args.keys.count;
  p.dim = args.rows.dim;
  p.padded_dim = args.rows.padded_dim;
  p.k = args.k;
  p.cost_scale = args.cost_scale;
  p.eps = args.eps;
  constexpr int kThreads = 128;
  const auto blocks = static_cast<unsigned>((args.rows.count + kThreads - 1) / kThreads);
  kernels::plan_rows_kernel<double><<<blocks, kThreads, 0, stream>>>(p);
  return cudaGetLastError();
}

template <class Op, kernels::value_format kFormat>
cudaError_t launch_plan_mma(const plan_rows_launch_args& args, cudaStream_t stream) {
  using namespace kernels::plan_tile;
  const device_cloud_view& rows = args.rows;
  const device_cloud_view& keys = args.keys;
  kernels::key_bias_kernel<float><<<blocks_for(keys.padded_count), kElementwiseThreads, 0, stream>>>(
      args.bias_scratch, args.key_potential, keys.log_weights, keys.scaled_sq_norm, keys.count, keys.padded_count,
      args.eps);
  cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess) return status;
  const std::int64_t columns = value_columns_padded(args.k);
  if (args.k > 0 && !args.values_staged) {
    kernels::stage_values_kernel<kFormat><<<blocks_for(columns * keys.padded_count), kElementwiseThreads, 0, stream>>>(
        static_cast<float*>(args.values_scratch), args.values, args.values_stride > 0 ? args.values_stride : args.k,
        keys.count, keys.padded_count, args.k, columns);
    if ((status = cudaGetLastError()) != cudaSuccess) return status;
  }

  kernels::plan_mma_params p{};
  p.rows_points = rows.points;
  p.key_points = keys.points;
  p.key_bias = args.bias_scratch;
  p.values_t = args.k > 0 ? args.values_scratch : nullptr;
  p.row_scaled_sq_norm = rows.scaled_sq_norm;
  p.key_scaled_sq_norm = keys.scaled_sq_norm;
  p.lse = args.lse;
  p.weighted = args.k > 0 ? args.weighted : nullptr;
  p.cost = args.cost;
  p.rows = rows.count;
  p.keys = keys.count;
  p.keys_padded = keys.padded_count;
  p.padded_words = rows.padded_dim * static_cast<std::int64_t>(sizeof(typename Op::storage)) / 4;
  p.k = args.k;
  p.score_scale_log2 = static_cast<float>(2.0 * args.cost_scale / args.eps * 1.44269504088896340736);
  p.cost_scale2 = static_cast<float>(2.0 * args.cost_scale);
  p.eps = args.eps;
  const dim3 grid(static_cast<unsigned>((rows.count + kBlockM - 1) / kBlockM),
                  static_cast<unsigned>(args.k > 0 ? columns / kValueCols : 1));
  auto launch = [&](auto kernel) {
    cudaError_t s = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSharedBytes);
    if (s != cudaSuccess) return s;
    kernel<<<grid, kThreads, kSharedBytes, stream>>>(p);
    return cudaGetLastError();
  };
  return args.cost != nullptr ? launch(kernels::plan_mma_kernel<Op, true>) : launch(kernels::plan_mma_kernel<Op, false>);
}

}  // namespace

std::int64_t plan_values_bytes(precision mode, std::int64_t k, std::int64_t keys_padded) {
  if (k <= 0 || mode == precision::fp64) return 0;
  return value_columns_padded(k) * keys_padded * static_cast<std::int64_t>(sizeof(float));
}

cudaError_t stage_plan_values(precision mode, const float* values, std::int64_t stride, std::int64_t keys,
                              std::int64_t keys_padded, std::int64_t k, void* staged, cudaStream_t stream) {
  if (k <= 0 || mode == precision::fp64) return cudaSuccess;
  const std::int64_t columns = value_columns_padded(k);
  auto* out = static_cast<float*>(staged);
  const unsigned blocks = blocks_for(columns * keys_padded);
  if (mode == precision::fp32)
    kernels::stage_values_kernel<kernels::value_format::fp32>
        <<<blocks, kElementwiseThreads, 0, stream>>>(out, values, stride, keys, keys_padded, k, columns);
  else
    kernels::stage_values_kernel<kernels::value_format::tf32>
        <<<blocks, kElementwiseThreads, 0, stream>>>(out, values, stride, keys, keys_padded, k, columns);
  return cudaGetLastError();
}

cudaError_t launch_plan_rows(precision mode, const plan_rows_launch_args& args, cudaStream_t stream) {
  if (args.rows.count <= 0) return cudaSuccess;
  if (args.rows.padded_dim != args.keys.padded_dim) return cudaErrorInvalidValue;
  switch (mode) {
    case precision::fp64: return launch_plan_fp64(args, stream);
    case precision::fp32:
      return launch_plan_mma<kernels::fp32_split_operands, kernels::value_format::fp32>(args, stream);
    case precision::tf32: return launch_plan_mma<kernels::tf32_operands, kernels::value_format::tf32>(args, stream);
    case precision::bf16: return launch_plan_mma<kernels::bf16_operands, kernels::value_format::tf32>(args, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace flashsinkhorn::detail
