// The SIMT plan pass: float64 arithmetic on the stored operands (Point: double in the fp64 mode,
// float in the fp32 mode with FMA dots, plan_pass_is_float64), one warp per row, the
// lanes striding over the keys (lane t: keys t, t + 32, …) so that a few thousand rows still fill
// the GPU. Two passes over the keys: the LSE (each lane's running state, merged across the warp by
// shuffles), then the softmax-weighted sums, accumulated
//   - k ≤ kLaneColumns (vectors, low-dimensional maps, the HVP's passes): in registers, each lane its
//     own partial row, summed across the warp at the end;
//   - wider values: per chunk of 32 keys, the lanes write the chunk's weights to the warp's slots in
//     shared memory and turn to the columns (lane c: columns c, c + 32, …) of the output row, which
//     they update in place — coalesced reads of V, no limit on k.
// The other modes run the tensor-core pass (plan_mma_kernel.cuh).
// Float points are widened before they multiply: a product of two floats is exact in float64, and
// the sums run over the coordinates in one order, so the x-rows and y-rows passes form the same
// C_ij to float64 rounding (the Schur complement's two products then apply one matrix).
// With `directions` set it is the fused quadratic ("two-GEMM") pass of backend::plan_quadratic_rows:
// each term of the weighted sum is also multiplied by u_i·z_j, the second dot product of the row's
// direction with the key's z_j — the key's stored point, or the key's row of `key_directions`
// (weighted_i = Σ_j softmax_ij (u_i·z_j) V_j); lse and cost unchanged.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "math/lse_state.hpp"

namespace flashsinkhorn::detail::kernels {

namespace plan_rows {
constexpr int kWarps = 4;  // rows per CTA
constexpr int kThreads = 32 * kWarps;
constexpr int kLaneColumns = 4;  // widest values summed in registers
}  // namespace plan_rows

template <class Point>
struct plan_rows_params {
  const Point* rows_points;  // (rows, padded_dim)
  const Point* key_points;   // (keys, padded_dim)
  const double* row_scaled_sq_norm;
  const double* key_scaled_sq_norm;
  const double* key_log_weights;
  const double* key_potential;
  const double* values;          // (keys, k), rows values_stride apart
  const double* directions;      // (rows, dim) float64, the u_i of a quadratic pass, or nullptr
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

template <class A, class B>
__device__ __forceinline__ double dot_product(const A* a, const B* b, std::int64_t n) {
  double dot = 0;
  for (std::int64_t c = 0; c < n; ++c) dot = fma(static_cast<double>(a[c]), static_cast<double>(b[c]), dot);
  return dot;
}

__device__ __forceinline__ double warp_sum(double x) {
  for (int offset = 16; offset > 0; offset /= 2) x += __shfl_xor_sync(0xffffffffu, x, offset);
  return x;
}

// combine is commutative term by term, so every lane ends with the same bits.
__device__ __forceinline__ math::lse_state<double> warp_combine(math::lse_state<double> s) {
  for (int offset = 16; offset > 0; offset /= 2) {
    const math::lse_state<double> other{__shfl_xor_sync(0xffffffffu, s.max, offset),
                                        __shfl_xor_sync(0xffffffffu, s.sum, offset)};
    s = math::combine(s, other);
  }
  return s;
}

// Row i's view of the keys: C_ij, S_ij = (h_j − C_ij)/ε + log w_j, and the quadratic factor u_i·z_j.
template <class Point>
struct plan_row {
  const plan_rows_params<Point>& p;
  const Point* query;
  const double* direction;  // u_i or nullptr
  std::int64_t i;
  double inv_eps;

  __device__ double cost(std::int64_t j) const {
    const double dot = dot_product(query, p.key_points + j * p.padded_dim, p.dim);
    return p.row_scaled_sq_norm[i] + p.key_scaled_sq_norm[j] - 2.0 * p.cost_scale * dot;
  }
  // ×(1/ε) rather than /ε: a float64 division costs ~10× an FMA on the key loop's critical path.
  __device__ double score(std::int64_t j, double c) const {
    const double h = p.key_potential != nullptr ? p.key_potential[j] : 0.0;
    return fma(h - c, inv_eps, p.key_log_weights[j]);
  }
  __device__ double direction_factor(std::int64_t j) const {
    if (direction == nullptr) return 1.0;
    if (p.key_directions != nullptr) return dot_product(direction, p.key_directions + j * p.dim, p.dim);
    return dot_product(direction, p.key_points + j * p.padded_dim, p.dim);
  }
};

// One lane's LSE over its keys: one exp per term (the running maximum moves rarely).
template <class Point>
__device__ __forceinline__ math::lse_state<double> lane_lse(const plan_row<Point>& row, int lane) {
  math::lse_state<double> state = math::lse_state<double>::identity();
  for (std::int64_t j = lane; j < row.p.keys; j += 32) {
    const double s = row.score(j, row.cost(j));
    if (s == -INFINITY) continue;
    if (s > state.max) {
      state.sum = state.sum * exp(state.max - s) + 1.0;
      state.max = s;
    } else {
      state.sum += exp(s - state.max);
    }
  }
  return state;
}

// kLaneColumns > 0: the register path (k ≤ kLaneColumns); 0: the shared-weights path.
template <class Point, int kLaneColumns>
__global__ void __launch_bounds__(plan_rows::kThreads) plan_rows_kernel(const plan_rows_params<Point> p) {
  __shared__ double chunk_weights[plan_rows::kWarps][32];
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int warp = static_cast<int>(threadIdx.x / 32);
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * plan_rows::kWarps + warp;
  if (i >= p.rows) return;  // the whole warp: no block-wide barrier follows
  const plan_row<Point> row{p, p.rows_points + i * p.padded_dim, p.directions != nullptr ? p.directions + i * p.dim : nullptr,
                     i, 1.0 / p.eps};

  const double lse = warp_combine(lane_lse(row, lane)).value();
  if (lane == 0) p.lse[i] = lse;
  if (p.weighted == nullptr && p.cost == nullptr) return;
  double* weighted = p.weighted != nullptr ? p.weighted + i * p.k : nullptr;

  // Lane `lane`'s term of key j: its weight into the cost sum, and the weight of V_j.
  double cost_sum = 0;
  auto value_weight = [&](std::int64_t j) {
    const double c = row.cost(j);
    const double s = row.score(j, c);
    if (s == -INFINITY) return 0.0;
    const double weight = exp(s - lse);
    cost_sum = fma(weight, c, cost_sum);
    return weighted != nullptr ? weight * row.direction_factor(j) : 0.0;
  };

  if constexpr (kLaneColumns > 0) {
    double sums[kLaneColumns] = {};
    for (std::int64_t j = lane; j < p.keys; j += 32) {
      const double w = value_weight(j);
      const double* v = p.values + j * p.values_stride;
#pragma unroll
      for (int c = 0; c < kLaneColumns; ++c)
        if (c < p.k && weighted != nullptr) sums[c] = fma(w, v[c], sums[c]);
    }
#pragma unroll
    for (int c = 0; c < kLaneColumns; ++c) sums[c] = warp_sum(sums[c]);
    if (lane == 0 && weighted != nullptr)
      for (int c = 0; c < p.k; ++c) weighted[c] = sums[c];
  } else {
    if (weighted != nullptr)
      for (std::int64_t c = lane; c < p.k; c += 32) weighted[c] = 0;
    for (std::int64_t key0 = 0; key0 < p.keys; key0 += 32) {
      const std::int64_t j = key0 + lane;
      const double w = j < p.keys ? value_weight(j) : 0.0;
      if (weighted == nullptr) continue;
      chunk_weights[warp][lane] = w;
      __syncwarp();
      const int count = static_cast<int>(p.keys - key0 < 32 ? p.keys - key0 : 32);
      for (std::int64_t c = lane; c < p.k; c += 32) {
        double sum = weighted[c];
        for (int t = 0; t < count; ++t) sum = fma(chunk_weights[warp][t], p.values[(key0 + t) * p.values_stride + c], sum);
        weighted[c] = sum;
      }
      __syncwarp();
    }
  }
  cost_sum = warp_sum(cost_sum);
  if (lane == 0 && p.cost != nullptr) p.cost[i] = cost_sum;
}

}  // namespace flashsinkhorn::detail::kernels
