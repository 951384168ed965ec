// The fp32 one-column plan pass on narrow rows (narrow_rows.cuh), the matrix-vector products of
// the Hessian's conjugate gradients:
//   lse_i = LSE_j S_ij,  weighted_i = Σ_j softmax_j(S_i·)·v_j
// with the plan scores t_ij = log₂ of the plan's entry from both potentials (narrow_scores::plan),
// so that the x-rows and the y-rows products apply one matrix bit for bit. Scores formed from the
// key side alone round to 2⁻²⁴ of β_j (~10³/ε), differently in the two orientations: measured on
// the H200 (n = 10⁴, shuffled regression, fp32), that left 6 of 10 CGs unconverged, as 3×TF32's ~1%
// an entry did. One CTA = narrow::kBlockRows rows against the key tiles of its split; with split
// keys each CTA leaves plan_vector_partial states (log2 reference, Σ 2^(t − ref), Σ 2^(t − ref)·v)
// that plan_vector_combine_kernel merges, else it finishes its rows as that kernel does.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/narrow_rows.cuh"
#include "cuda/plan_mma_kernel.cuh"

namespace flashsinkhorn::detail::kernels {

// p.values_t: the staged vector (keys_padded floats) or nullptr (the LSE-only pass); p.row_potential
// set; p.rows_padded set whether or not the keys split.
template <int kDim>
__global__ void __launch_bounds__(narrow::kThreads) plan_vector_narrow_kernel(const plan_mma_params p) {
  __shared__ narrow_key_tile<kDim, true> tile;
  const std::int64_t row0 = static_cast<std::int64_t>(blockIdx.x) * narrow::kBlockRows;
  narrow_queries<kDim> rows;
  rows.load(static_cast<const float*>(p.rows_points), p.padded_words, p.rows_padded, row0);
#pragma unroll
  for (int r = 0; r < narrow::kRowsPerThread; ++r) {
    const std::int64_t i = narrow_queries<kDim>::row(row0, r);
    rows.bias[r] = i < p.rows ? plan_row_bias(p, i) : 0.f;
  }
  narrow_row_states<double> state;
  state.reset();
  const int key_tiles = static_cast<int>((p.keys + narrow::kTileKeys - 1) / narrow::kTileKeys);
  const int tile_begin = blockIdx.y * p.tiles_per_split;
  const int tile_end = min(key_tiles, tile_begin + p.tiles_per_split);
  fold_narrow_keys<narrow_scores::plan>(tile, static_cast<const float*>(p.key_points), p.padded_words, p.key_bias,
                                        static_cast<const float*>(p.values_t), tile_begin, tile_end, rows,
                                        p.score_scale_log2, state);

#pragma unroll
  for (int r = 0; r < narrow::kRowsPerThread; ++r) {
    const std::int64_t i = narrow_queries<kDim>::row(row0, r);
    if (i >= p.rows) continue;
    if (p.partials != nullptr) {
      p.partials[blockIdx.y * p.rows_padded + i] = {state.reference[r], static_cast<float>(state.sum[r]),
                                                    static_cast<float>(state.weighted[r])};
      continue;
    }
    const double sum = state.sum[r];
    p.lse[i] = static_cast<double>(state.reference[r]) * 0.69314718055994530942 + log(sum) -
               plan_lse_offset(p, i, rows.bias[r]);
    if (p.weighted != nullptr) p.weighted[i] = sum > 0 ? state.weighted[r] / sum : 0.0;
  }
}

}  // namespace flashsinkhorn::detail::kernels
