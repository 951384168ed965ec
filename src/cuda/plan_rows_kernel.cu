// Host launch of the plan pass (plan_rows_launch.hpp).
#include "cuda/plan_rows_kernel.cuh"
#include "cuda/plan_rows_launch.hpp"

namespace flashsinkhorn::detail {

cudaError_t launch_plan_rows(precision mode, const plan_rows_launch_args& args, cudaStream_t stream) {
  kernels::plan_rows_params p{};
  p.rows_points = args.rows.points;
  p.key_points = args.keys.points;
  p.row_scaled_sq_norm = args.rows.scaled_sq_norm;
  p.key_scaled_sq_norm = args.keys.scaled_sq_norm;
  p.key_log_weights = args.keys.log_weights;
  p.key_potential = args.key_potential;
  p.values = args.values;
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
  if (blocks == 0) return cudaSuccess;
  switch (mode) {
    case precision::fp64: kernels::plan_rows_kernel<double><<<blocks, kThreads, 0, stream>>>(p); break;
    case precision::fp32:
    case precision::tf32: kernels::plan_rows_kernel<float><<<blocks, kThreads, 0, stream>>>(p); break;
    case precision::bf16: kernels::plan_rows_kernel<__nv_bfloat16><<<blocks, kThreads, 0, stream>>>(p); break;
  }
  return cudaGetLastError();
}

}  // namespace flashsinkhorn::detail
