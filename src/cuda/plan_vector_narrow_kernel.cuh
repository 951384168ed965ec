// The one-column plan pass of the fp32 mode on narrow rows, in float64 arithmetic
// (narrow_rows.cuh with Real = double): the matrix-vector products and masses of the Hessian's
// conjugate gradients and the LSE-only pass,
//   lse_i = LSE_j S_ij,  weighted_i = Σ_j softmax_j(S_i·)·v_j,  S_ij = β_j + (2s/ε)·p_i·q_j − s‖p_i‖²/ε
// with β_j = (h_j − s‖q_j‖²)/ε + log w_j (key_bias_kernel<double>) and v in float64. Its numbers are
// those of the float64 SIMT pass (plan_rows_kernel.cuh) to float64 rounding, so the passes of one
// Hessian product may mix the two and still apply one matrix. It was the faster one against the
// SIMT pass's former warp per row (session 21): the key tile shared by a block of rows held in
// registers, compile-time d, one pass over the keys with an online maximum; against the tiled SIMT
// pass of session 52 not measured yet. One CTA = block_rows<double> rows against the key tiles of
// its split; with split keys each CTA leaves narrow_vector_partial states that
// plan_vector_narrow_combine_kernel merges.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/narrow_rows.cuh"
#include "cuda/plan_mma_kernel.cuh"

namespace flashsinkhorn::detail::kernels {

struct narrow_vector_partial {
  double max;
  double sum;
  double weighted;
};

struct plan_vector_narrow_params {
  const float* rows_points;           // (rows_padded, padded_dim)
  narrow_keys<double> keys;           // β natural units; values: v (count keys) or nullptr (LSE only)
  const double* row_scaled_sq_norm;   // (rows,) s‖p_i‖²
  double* lse;                        // (rows,)
  double* weighted;                   // (rows,) or nullptr
  std::int64_t rows;
  std::int64_t rows_padded;
  double score_scale;                 // 2s/ε
  double eps;
  int key_tiles;
  int tiles_per_split;
  narrow_vector_partial* partials;    // (splits, rows_padded) with split keys, else nullptr
};

// Row i's outputs from its merged state.
__device__ __forceinline__ void finish_narrow_vector_row(const plan_vector_narrow_params& p, std::int64_t i,
                                                         double max, double sum, double weighted) {
  p.lse[i] = max + log(sum) - p.row_scaled_sq_norm[i] / p.eps;
  if (p.weighted != nullptr) p.weighted[i] = sum > 0 ? weighted / sum : 0.0;
}

// kByEx2: the weights' e^x by math::exp_by_exp2 (FLASHSINKHORN_FP32_PASS_EXP=ex2), as the SIMT pass
// of the same process takes them.
template <int kDim, bool kByEx2>
__global__ void __launch_bounds__(narrow::kThreads) plan_vector_narrow_kernel(const plan_vector_narrow_params p) {
  constexpr int kRows = narrow::rows_per_thread<double>;
  __shared__ narrow_key_tile<double, kDim, true> tile;
  const std::int64_t row0 = static_cast<std::int64_t>(blockIdx.x) * narrow::block_rows<double>;
  narrow_queries<double, kDim> rows;
  rows.load(p.rows_points, p.keys.padded_dim, p.rows_padded, row0);
  narrow_row_states<double> state;
  state.reset();
  const int tile_begin = blockIdx.y * p.tiles_per_split;
  const int tile_end = min(p.key_tiles, tile_begin + p.tiles_per_split);
  fold_narrow_keys<double, kDim, true, kByEx2>(tile, p.keys, tile_begin, tile_end, rows, p.score_scale, state);
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    const std::int64_t i = narrow_queries<double, kDim>::row(row0, r);
    if (i >= p.rows) continue;
    if (p.partials != nullptr)
      p.partials[blockIdx.y * p.rows_padded + i] = {state.reference[r], state.sum[r], state.weighted[r]};
    else
      finish_narrow_vector_row(p, i, state.reference[r], state.sum[r], state.weighted[r]);
  }
}

// Merges the key splits, one thread per row (merge_split_partials in natural units), then the
// one-split finish.
__global__ void plan_vector_narrow_combine_kernel(const plan_vector_narrow_params p, int splits) {
  const std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (row >= p.rows) return;
  const merged_split_state merged =
      merge_split_partials(p.partials + row, p.rows_padded, splits, [](double x) { return exp(x); });
  finish_narrow_vector_row(p, row, merged.max, merged.sum, merged.weighted);
}

}  // namespace flashsinkhorn::detail::kernels
