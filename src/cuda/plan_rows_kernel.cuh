// The plan pass of the fp64 mode: one thread per row, float64 arithmetic on the stored operands,
// two passes over the keys (LSE, then the softmax-weighted sums written straight into the caller's
// row). The other modes run the tensor-core pass (plan_mma_kernel.cuh).
// With `directions` set it is the fused quadratic ("two-GEMM") pass of backend::plan_quadratic_rows:
// each term of the weighted sum is also multiplied by u_i·z_j, the second dot product of the row's
// direction with the key's z_j — the key's stored point, or the key's row of `key_directions`
// (weighted_i = Σ_j softmax_ij (u_i·z_j) V_j); lse and cost unchanged.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "math/lse_state.hpp"

namespace flashsinkhorn::detail::kernels {

__device__ __forceinline__ double to_double(double x) { return x; }
__device__ __forceinline__ double to_double(float x) { return x; }
__device__ __forceinline__ double to_double(__nv_bfloat16 x) { return __bfloat162float(x); }

struct plan_rows_params {
  const void* rows_points;
  const void* key_points;
  const double* row_scaled_sq_norm;
  const double* key_scaled_sq_norm;
  const double* key_log_weights;
  const double* key_potential;
  const double* values;  // (keys, k), rows values_stride apart
  const double* directions;  // (rows, dim) float64, the u_i of a quadratic pass, or nullptr
  const double* key_directions;  // (keys, dim) float64 z_j of a quadratic pass, or nullptr: the keys' points
  std::int64_t values_stride;
  double* lse;
  double* weighted;
  double* cost;
  std::int64_t rows;
  std::int64_t keys;
  std::int64_t dim;
  std::int64_t padded_dim;
  std::int64_t k;
  double cost_scale;
  double eps;
};

template <class S>
__device__ __forceinline__ double plan_cost(const plan_rows_params& p, const S* query, std::int64_t i,
                                            std::int64_t j) {
  const S* key = static_cast<const S*>(p.key_points) + j * p.padded_dim;
  double dot = 0;
  for (std::int64_t c = 0; c < p.dim; ++c) dot = fma(to_double(query[c]), to_double(key[c]), dot);
  return p.row_scaled_sq_norm[i] + p.key_scaled_sq_norm[j] - 2.0 * p.cost_scale * dot;
}

template <class S>
__global__ void plan_rows_kernel(const plan_rows_params p) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= p.rows) return;
  const S* query = static_cast<const S*>(p.rows_points) + i * p.padded_dim;
  auto score = [&](std::int64_t j, double cost) {
    const double h = p.key_potential != nullptr ? p.key_potential[j] : 0.0;
    return (h - cost) / p.eps + p.key_log_weights[j];
  };
  math::lse_state<double> state = math::lse_state<double>::identity();
  for (std::int64_t j = 0; j < p.keys; ++j)
    state = math::combine(state, math::lse_state<double>{score(j, plan_cost(p, query, i, j)), 1.0});
  const double lse = state.value();
  p.lse[i] = lse;
  if (p.weighted == nullptr && p.cost == nullptr) return;
  double* weighted = p.weighted != nullptr ? p.weighted + i * p.k : nullptr;
  if (weighted != nullptr)
    for (std::int64_t c = 0; c < p.k; ++c) weighted[c] = 0;
  double cost_sum = 0;
  for (std::int64_t j = 0; j < p.keys; ++j) {
    const double cost = plan_cost(p, query, i, j);
    const double s = score(j, cost);
    if (s == -INFINITY) continue;
    const double weight = exp(s - lse);
    cost_sum = fma(weight, cost, cost_sum);
    if (weighted == nullptr) continue;
    double value_weight = weight;
    if (p.directions != nullptr) {  // × u_i·z_j
      const double* u = p.directions + i * p.dim;
      double u_dot_z = 0;
      if (p.key_directions != nullptr) {
        const double* z = p.key_directions + j * p.dim;
        for (std::int64_t c = 0; c < p.dim; ++c) u_dot_z = fma(u[c], z[c], u_dot_z);
      } else {
        const S* key = static_cast<const S*>(p.key_points) + j * p.padded_dim;
        for (std::int64_t c = 0; c < p.dim; ++c) u_dot_z = fma(u[c], to_double(key[c]), u_dot_z);
      }
      value_weight *= u_dot_z;
    }
    for (std::int64_t c = 0; c < p.k; ++c) weighted[c] = fma(value_weight, p.values[j * p.values_stride + c], weighted[c]);
  }
  if (p.cost != nullptr) p.cost[i] = cost_sum;
}

}  // namespace flashsinkhorn::detail::kernels
