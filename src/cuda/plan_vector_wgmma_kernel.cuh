// The one-column plan pass on Hopper (sm_90a, tf32 and bf16): per row i of `rows`,
//   weighted_i = Σ_j softmax_j(S_i·)·v_j,   lse_i = LSE_j S_ij
// — the matrix-vector products P·v / Pᵀ·u of the HVP's conjugate gradients — at the cost of a
// softmin half-step. The scores are those of the copy-engine softmin kernel
// (softmin_wgmma_tma_kernel.cuh: a resident query block of kWgmmaBlockM rows, a ring of 128-key
// stages filled by the copy engine with one full and one empty barrier per stage, S = Q·Kᵀ by
// wgmma); beside each stage's β the copy engine brings the stage's 128 values v_j (fp32), and the
// online softmax carries, next to Σ_j 2^(t_j − max), the sum Σ_j 2^(t_j − max)·v_j (one FMA per
// score). P and v stay fp32, as in plan_mma_kernel.cuh's kVector pass: the CG on the Schur
// complement c∘v − Pᵀ(P·v)/a cancels most of each term, and a tf32-rounded P or v stalls it.
//
// Key splits, their partial states (row maximum in log₂ units, Σ P, Σ P·v) and their merge are
// plan_mma_kernel.cuh's (plan_vector_partial, plan_vector_combine_kernel): p.partials == nullptr
// finishes the rows here. Without values (kValues false) it is the LSE-only pass (the solved
// plan's f̃ = T_f(g), core/solved_plan.cpp): the softmin's reduction, no v in the ring. (A
// template argument, not a run-time flag: the flag spilled the d = 64 instance's registers.)
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/plan_mma_kernel.cuh"
#include "cuda/softmin_kernel.cuh"
#include "cuda/softmin_wgmma_kernel.cuh"
#include "cuda/tile_config.hpp"
#include "cuda/tma.cuh"
#include "cuda/tma_tile_copies.cuh"
#include "cuda/wgmma.cuh"

namespace flashsinkhorn::detail::kernels {

// Shared memory of the pass for rows of kSteps 32-byte k-steps: the query block, then `stages` key
// stages, then per stage the tile's β and its v (kTileN floats each).
namespace plan_vector_wgmma {
__host__ __device__ constexpr int panels(int steps) {
  return (steps * wgmma::kStepBytes / 4 + wgmma::kPanelWords - 1) / wgmma::kPanelWords;
}
__host__ __device__ constexpr int query_bytes(int steps) {
  return panels(steps) * tile::kWgmmaBlockM * wgmma::kPanelRowBytes;
}
__host__ __device__ constexpr int stage_bytes(int steps) { return panels(steps) * wgmma::kTileN * wgmma::kPanelRowBytes; }
inline constexpr int kVectorBytes = wgmma::kTileN * 4;  // one of β, v for one stage
__host__ __device__ constexpr int shared_bytes(int steps, int stages) {
  return wgmma::kPanelAlignment + query_bytes(steps) + stages * (stage_bytes(steps) + 2 * kVectorBytes);
}
}  // namespace plan_vector_wgmma

#if defined(FLASHSINKHORN_WGMMA_ENABLED)

// The online softmax of one 64×128 score tile (reduce_score_tile of softmin_wgmma_kernel.cuh) that
// also carries this thread's Σ 2^(t − max)·v_j of rows g and g + 8 (`row_dot`, rescaled with the
// sums). `values`: the tile's 128 v_j in shared memory.
__device__ __forceinline__ void reduce_weighted_score_tile(const float (&acc)[wgmma::kAccumulators],
                                                           const float* bias, const float* values, float scale,
                                                           float (&row_max)[2], float (&row_sum)[2],
                                                           float (&row_dot)[2]) {
  float2 beta[kTileBiasPairs];
  load_tile_bias(beta, bias);
  // v of the same columns as β, read where used (in registers beside β, t and the accumulators
  // they would exceed the 128 registers of two CTAs per SM).
  const float2* value_lane = reinterpret_cast<const float2*>(values + 2 * (threadIdx.x % 4));
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    float t[kRowScores];
    const row_max_step step = advance_row_max(row_max[h], tile_row_scores(acc, beta, scale, h, t));
    float sums[4] = {row_sum[h] * step.rescale, 0.f, 0.f, 0.f};
    float dots[4] = {row_dot[h] * step.rescale, 0.f, 0.f, 0.f};
#pragma unroll
    for (int k = 0; k < kRowScores; ++k) {
      const float e = fast_exp2(t[k] - step.reference);
      sums[k % 4] += e;
      const float2 v = value_lane[4 * (k / 2)];
      dots[k % 4] = fmaf(e, k % 2 == 0 ? v.x : v.y, dots[k % 4]);
    }
    row_sum[h] = (sums[0] + sums[1]) + (sums[2] + sums[3]);
    row_dot[h] = (dots[0] + dots[1]) + (dots[2] + dots[3]);
  }
}

#endif  // FLASHSINKHORN_WGMMA_ENABLED

// p: plan_mma_params as the kVector pass takes them (key_bias: β·log₂e, −∞ on padded keys;
// values_t: the keys_padded fp32 v_j, 0 on padded keys). `stages`: the ring depth the launcher
// sized the shared memory for (plan_vector_wgmma::shared_bytes).
template <class Op, int kSteps, bool kValues>
__global__ void __launch_bounds__(tile::kWgmmaThreads, tile::kWgmmaCtasPerSm)
    plan_vector_wgmma_kernel(const plan_mma_params p, const int stages, const __grid_constant__ CUtensorMap rows_map,
                             const __grid_constant__ CUtensorMap keys_map) {
#if defined(FLASHSINKHORN_WGMMA_ENABLED)
  namespace geo = plan_vector_wgmma;
  extern __shared__ __align__(16) unsigned char shared_raw[];
  __shared__ __align__(8) std::uint64_t full[tile::kWgmmaMaxStages];
  __shared__ __align__(8) std::uint64_t empty[tile::kWgmmaMaxStages];
  __shared__ __align__(8) std::uint64_t query_full;
  unsigned char* shared = panel_aligned(shared_raw);
  constexpr int kPanels = geo::panels(kSteps);
  constexpr std::uint32_t kKeyBytes = geo::stage_bytes(kSteps);

  const int key_tiles = static_cast<int>(p.keys_padded / wgmma::kTileN);
  const bool split = p.partials != nullptr;
  const int tiles_per_split = split ? p.tiles_per_split : key_tiles;
  const int tile_begin = static_cast<int>(blockIdx.y) * tiles_per_split;
  const int tiles = max(0, min(key_tiles, tile_begin + tiles_per_split) - tile_begin);
  const std::int64_t row_block0 = static_cast<std::int64_t>(blockIdx.x) * tile::kWgmmaBlockM;
  const auto* values = static_cast<const float*>(p.values_t);
  constexpr bool has_values = kValues;

  unsigned char* query = shared;                           // (panels, kWgmmaBlockM, 128 B)
  unsigned char* ring = shared + geo::query_bytes(kSteps);  // stages × keys (panels, kTileN, 128 B)
  float* vectors = reinterpret_cast<float*>(ring + stages * kKeyBytes);  // (stages, [β, v], kTileN)
  auto stage_of = [&](int t) { return ring + (t % stages) * kKeyBytes; };
  auto bias_of = [&](int t) { return vectors + (t % stages) * 2 * wgmma::kTileN; };
  auto values_of = [&](int t) { return bias_of(t) + wgmma::kTileN; };
  const bool producer = threadIdx.x == 0;

  if (producer) tma::init_ring_barriers(full, empty, stages, tile::kWgmmaThreads, &query_full);
  __syncthreads();

  auto issue_tile = [&](int t) {  // producer only: keys, β and v of tile t on one barrier
    const int key0 = (tile_begin + t) * wgmma::kTileN;
    std::uint64_t* barrier = &full[t % stages];
    tma::arrive_expect_bytes(barrier, kKeyBytes + (has_values ? 2 : 1) * geo::kVectorBytes);
#pragma unroll
    for (int c = 0; c < kPanels; ++c)
      tma::load_2d(stage_of(t) + c * wgmma::kTileN * wgmma::kPanelRowBytes, &keys_map, c * wgmma::kPanelWords, key0,
                   barrier);
    tma::load_1d(bias_of(t), p.key_bias + key0, geo::kVectorBytes, barrier);
    if constexpr (kValues) tma::load_1d(values_of(t), values + key0, geo::kVectorBytes, barrier);
  };
  if (producer) {
    load_query_block<kPanels>(query, &rows_map, row_block0, &query_full);
    for (int t = 0; t < stages && t < tiles; ++t) issue_tile(t);
  }
  __syncwarp();

  const int warpgroup = threadIdx.x / 128;
  const std::uint32_t query_address = smem_address(query) + warpgroup * 64 * wgmma::kPanelRowBytes;
  float row_max[2] = {-INFINITY, -INFINITY};  // rows g and g + 8 of this warp's 16
  float row_sum[2] = {0.f, 0.f};
  float row_dot[2] = {0.f, 0.f};

  tma::wait(&query_full, 0);
  float acc[wgmma::kAccumulators];  // (64 rows, 128 keys) of this warpgroup, layout of wgmma.cuh
  for (int j = 0; j < tiles; ++j) {
    tma::wait(&full[j % stages], (j / stages) & 1);
    issue_tile_scores<Op, kSteps>(acc, query_address, smem_address(stage_of(j)));
    wgmma::wait_group<0>();
    wgmma::pin(acc);
    if constexpr (kValues)
      reduce_weighted_score_tile(acc, bias_of(j), values_of(j), p.score_scale_log2, row_max, row_sum, row_dot);
    else
      reduce_score_tile(acc, bias_of(j), p.score_scale_log2, row_max, row_sum);
    tma::arrive(&empty[j % stages]);
    // Refill the stage of tile j − 1 once both warpgroups are done with it (as the softmin kernel).
    const int refill = j - 1 + stages;
    if (producer && j >= 1 && refill < tiles) {
      tma::wait(&empty[(j - 1) % stages], ((j - 1) / stages) & 1);
      issue_tile(refill);
    }
    __syncwarp();  // warp 0 whole again before the next wgmma (.sync.aligned)
  }

  const int warp_in_group = (threadIdx.x % 128) / 32;
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    float sum = row_sum[h], dot = row_dot[h];
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    sum += __shfl_xor_sync(0xffffffffu, sum, 2);
    dot += __shfl_xor_sync(0xffffffffu, dot, 1);
    dot += __shfl_xor_sync(0xffffffffu, dot, 2);
    const std::int64_t row = row_block0 + warpgroup * 64 + warp_in_group * 16 + h * 8 + lane / 4;
    if (lane % 4 != 0 || row >= p.rows) continue;
    if (split) {
      p.partials[blockIdx.y * p.rows_padded + row] = {row_max[h], sum, dot};
      continue;
    }
    p.lse[row] = static_cast<double>(row_max[h]) * 0.69314718055994530942 + log(static_cast<double>(sum)) -
                 p.row_scaled_sq_norm[row] / p.eps;
    if (has_values && p.weighted != nullptr)
      p.weighted[row] = sum > 0 ? static_cast<double>(dot) / static_cast<double>(sum) : 0.0;
  }
#elif defined(__CUDA_ARCH__)
  __trap();  // the launcher selects this kernel only on sm_90a builds running on sm_90
#endif
}

}  // namespace flashsinkhorn::detail::kernels
