// The pass of a point gradient in the fp32 mode on narrow rows, in fp32 arithmetic: per row i
//   lse_i = LSE_j S_ij,   weighted_ic = Σ_j softmax_j(S_i·)·q_jc   (c < k, the keys' own coordinates),
//   S_ij = β_j + (2s/ε)·p_i·q_j − s‖p_i‖²/ε,  β_j = (h_j − s‖q_j‖²)/ε + log w_j,
// which point_gradient_launch.hpp's epilogue turns into ∇_i = 2s·m_i·(p_i − weighted_i). The
// scores are those of the softmin it follows (softmin_narrow_kernel.cuh: fp32 FMA dots, log₂ units,
// ex2.approx), so P̃ is the plan of the potentials the solve returned, not a re-rounded one; the
// values are the stored key points the dots read (the fp32 mode stores the exact centred points),
// so a key tile holds them once. The tensor-core pass it replaces padded the k ≤ 16 value columns
// to 64 and took P·V as 3×TF32 products (docs/cuda_backend.md, "The plan pass and the gradients").
//
// Not for the Hessian's conjugate gradients: their passes must form one float64 matrix
// (plan_vector_narrow_kernel.cuh); a gradient is one product, accurate to the fp32 scores.
//
// Sums: each sub-tile of keys is summed in fp32 (≤ 16 terms) and joins the row's running sums,
// which are fp32 too but grow by one addition per sub-tile, so at m keys a sum carries about
// √(m/16)·2⁻²⁴ of relative rounding. One CTA = kThreads·kRows rows against the key tiles of its
// split; with split keys each CTA leaves (reference, sum, weighted[k]) per row in float64 partials
// that plan_points_narrow_combine_kernel merges.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/narrow_rows.cuh"
#include "cuda/softmin_kernel.cuh"

namespace flashsinkhorn::detail::kernels {

namespace narrow_points {
// Rows a thread owns: 4 while the row's sums fit beside its coordinates, 2 on wider rows.
template <int kDim>
inline constexpr int rows_per_thread = kDim <= 4 ? 4 : 2;
template <int kDim>
inline constexpr int block_rows = narrow::kThreads * rows_per_thread<kDim>;
// Scores held per row before their exponentials.
template <int kDim>
inline constexpr int sub_keys = kDim <= 4 ? 16 : 8;
}  // namespace narrow_points

struct plan_points_narrow_params {
  const float* rows_points;          // (rows_padded, padded_dim) the stored rows
  const float* key_points;           // (keys_padded, padded_dim) the stored keys (also the values)
  const float* key_bias;             // (keys_padded,) β in log₂ units, −∞ on padding keys
  const double* row_scaled_sq_norm;  // (rows,) s‖p_i‖²
  double* lse;                       // (rows,)
  double* weighted;                  // (rows, k)
  std::int64_t rows;
  std::int64_t rows_padded;
  std::int64_t padded_dim;
  int k;                             // value columns written: the cloud's dim (≤ kDim)
  float score_scale_log2;            // (2s/ε)·log₂e
  double eps;
  int key_tiles;
  int tiles_per_split;
  double* partials;                  // (splits, rows_padded, 2 + k) with split keys, else nullptr
};

// Row i's lse (natural units) from its state in log₂ units; its weighted_ic are Σ/sum, written by the caller.
__device__ __forceinline__ void finish_points_lse(const plan_points_narrow_params& p, std::int64_t i, double reference,
                                                  double sum) {
  p.lse[i] = (reference + log2(sum)) * 0.693147180559945309 - p.row_scaled_sq_norm[i] / p.eps;
}

template <int kDim>
__global__ void __launch_bounds__(narrow::kThreads) plan_points_narrow_kernel(const plan_points_narrow_params p) {
  constexpr int kRows = narrow_points::rows_per_thread<kDim>;
  constexpr int kSub = narrow_points::sub_keys<kDim>;
  using tile_t = narrow_key_tile<float, kDim, false>;
  constexpr int kWordFloats = tile_t::kVecs * tile_t::kLanes;
  __shared__ tile_t tile;

  const std::int64_t row0 = static_cast<std::int64_t>(blockIdx.x) * narrow_points::block_rows<kDim>;
  auto row_of = [&](int r) { return row0 + static_cast<std::int64_t>(r) * narrow::kThreads + threadIdx.x; };
  float q[kRows][kDim];  // (kRows, kDim) the thread's rows
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    const std::int64_t i = row_of(r);
#pragma unroll
    for (int c = 0; c < kDim; ++c) q[r][c] = i < p.rows_padded ? p.rows_points[i * p.padded_dim + c] : 0.f;
  }
  float reference[kRows], sum[kRows];  // (kRows) log₂ units
  float weighted[kRows][kDim];         // (kRows, kDim) Σ 2^(t − reference)·q_j
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    reference[r] = -INFINITY;
    sum[r] = 0.f;
#pragma unroll
    for (int c = 0; c < kDim; ++c) weighted[r][c] = 0.f;
  }

  const int tile_begin = blockIdx.y * p.tiles_per_split;
  const int tile_end = min(p.key_tiles, tile_begin + p.tiles_per_split);
  const narrow_keys<float> keys{p.key_points, p.padded_dim, p.key_bias, nullptr, 0, 0};
  for_each_narrow_tile(tile, keys, tile_begin, tile_end, [&] {
#pragma unroll 1
    for (int sub = 0; sub < narrow::kTileKeys; sub += kSub) {
      // The sub-tile's scores t = fma(p·q, c, β) and each row's largest.
      float t[kRows][kSub];  // (kRows, kSub)
      float top[kRows];      // (kRows)
#pragma unroll
      for (int r = 0; r < kRows; ++r) top[r] = -INFINITY;
#pragma unroll
      for (int jj = 0; jj < kSub; ++jj) {
        float word[kWordFloats];  // (kDim coordinates, β, zeros)
        tile.read(sub + jj, word);
#pragma unroll
        for (int r = 0; r < kRows; ++r) {
          float dot = q[r][0] * word[0];
#pragma unroll
          for (int c = 1; c < kDim; ++c) dot = fmaf(q[r][c], word[c], dot);
          t[r][jj] = fmaf(dot, p.score_scale_log2, word[kDim]);
          top[r] = fmaxf(top[r], t[r][jj]);
        }
      }
      // The reference moves only when the sub-tile exceeds it (rare once a row met its large scores).
      float base[kRows];
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        if (top[r] > reference[r]) {
          const float rescale = fast_exp2(reference[r] - top[r]);  // 0 from −∞
          sum[r] *= rescale;
#pragma unroll
          for (int c = 0; c < kDim; ++c) weighted[r][c] *= rescale;
          reference[r] = top[r];
        }
        base[r] = reference[r] == -INFINITY ? 0.f : reference[r];  // only −∞ scores so far: e = 0
      }
      // Their weights e = 2^(t − reference), summed over the sub-tile, then into the running sums.
      float sub_sum[kRows];               // (kRows)
      float sub_weighted[kRows][kDim];    // (kRows, kDim)
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        sub_sum[r] = 0.f;
#pragma unroll
        for (int c = 0; c < kDim; ++c) sub_weighted[r][c] = 0.f;
      }
#pragma unroll
      for (int jj = 0; jj < kSub; ++jj) {
        float word[kWordFloats];
        tile.read(sub + jj, word);  // the key's coordinates again: they are its values
#pragma unroll
        for (int r = 0; r < kRows; ++r) {
          const float e = fast_exp2(t[r][jj] - base[r]);
          sub_sum[r] += e;
#pragma unroll
          for (int c = 0; c < kDim; ++c) sub_weighted[r][c] = fmaf(e, word[c], sub_weighted[r][c]);
        }
      }
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        sum[r] += sub_sum[r];
#pragma unroll
        for (int c = 0; c < kDim; ++c) weighted[r][c] += sub_weighted[r][c];
      }
    }
  });

#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    const std::int64_t i = row_of(r);
    if (i >= p.rows) continue;
    if (p.partials != nullptr) {
      double* out = p.partials + (static_cast<std::int64_t>(blockIdx.y) * p.rows_padded + i) * (2 + p.k);
      out[0] = reference[r];
      out[1] = sum[r];
#pragma unroll
      for (int c = 0; c < kDim; ++c)
        if (c < p.k) out[2 + c] = weighted[r][c];
    } else {
      finish_points_lse(p, i, reference[r], sum[r]);
#pragma unroll
      for (int c = 0; c < kDim; ++c)
        if (c < p.k) p.weighted[i * p.k + c] = sum[r] > 0 ? static_cast<double>(weighted[r][c]) / sum[r] : 0.0;
    }
  }
}

// Merges the key splits, one thread per row (in float64, log₂ units), then the row's finish.
__global__ void plan_points_narrow_combine_kernel(const plan_points_narrow_params p, int splits) {
  const std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (row >= p.rows) return;
  const std::int64_t stride = p.rows_padded * (2 + p.k);  // between the splits of one row
  const double* first = p.partials + row * (2 + p.k);
  double reference = -INFINITY;
  for (int s = 0; s < splits; ++s) reference = fmax(reference, first[s * stride]);
  // Each split's state scaled to the common reference (0 for a split of padding keys only).
  auto scaled = [&](int s, int field) {
    const double* state = first + s * stride;
    return state[0] == -INFINITY ? 0.0 : state[field] * exp2(state[0] - reference);
  };
  double sum = 0;
  for (int s = 0; s < splits; ++s) sum += scaled(s, 1);
  finish_points_lse(p, row, reference, sum);
  for (int c = 0; c < p.k; ++c) {
    double total = 0;
    for (int s = 0; s < splits; ++s) total += scaled(s, 2 + c);
    p.weighted[row * p.k + c] = sum > 0 ? total / sum : 0.0;
  }
}

}  // namespace flashsinkhorn::detail::kernels
