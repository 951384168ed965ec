// The plan pass on Hopper (sm_90a), FlashAttention-3's forward over the Sinkhorn score matrix:
// per row i of the `rows` cloud (backend.hpp, plan_rows_request),
//   lse_i      = LSE_j S_ij,   weighted_i = Σ_j softmax_j(S_i·)·V_j     (no cost sum: that pass
//                                                                       stays on plan_mma_kernel)
// with S_ij = t_ij·ln 2 − s‖p_i‖²/ε, t_ij = (2s/ε)·log₂e·p_i·q_j + β_j as in the softmin kernels.
//
// The warp-specialised layout of softmin_wgmma_ws_kernel.cuh: one CTA per SM, two consumer
// warpgroups of 64 rows (query block in registers) and a producer warpgroup whose first thread
// moves every tile with the copy engine — per 128-key tile, the key panels, their β and the Vᵀ
// tile of this CTA's kValueCols value columns (4 panels of 32 keys × 64 columns), one full
// barrier for the three. Per tile, each consumer warpgroup
//   S = Q·Kᵀ                 m64n128k8 (tf32) / k16 (bf16), A from registers
//   online softmax           running max m (log₂ units, agreed by the quad), O and the row sums
//                            rescaled by 2^(m_old − m_new), P = 2^(t − m_new) rounded to tf32
//   O += P·V                 m64n64k8 tf32, A = P straight from the registers of S
// and releases the stage. As in plan_mma_kernel.cuh, l sums the rounded P the product sees (P̃·1
// = 1 up to float accumulation) and the LSE takes the unrounded sum.
//
// P as the A operand: S's accumulator holds keys 8i + 2t, 8i + 2t + 1 of each n8 group i (rows g
// and g + 8), the RS A fragment wants k-slots t and t + 4 of the k-step: slot t is fed key 2t and
// slot t + 4 key 2t + 1, so Vᵀ is staged with the same permutation inside every 8-key group
// (plan_values_kernel.cuh, permuted) and B reads it in order through the descriptor.
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "cuda/key_splits.hpp"
#include "cuda/softmin_wgmma_ws_kernel.cuh"
#include "cuda/tma.cuh"
#include "cuda/wgmma.cuh"

namespace flashsinkhorn::detail::kernels {

namespace plan_wgmma {
inline constexpr int kValueCols = 64;  // value columns per CTA: the N of m64n64k8
inline constexpr int kValuePanelBytes = kValueCols * wgmma::kPanelRowBytes;  // 32 keys × 64 columns
inline constexpr int kValuePanels = wgmma::kTileN / wgmma::kPanelWords;      // 4 per key tile
inline constexpr int kValueTileBytes = kValuePanels * kValuePanelBytes;      // 32 KiB
inline constexpr int kMaxStages = 4;
// The query block lives in registers: kSteps·4 words per consumer thread, next to S (64), P (64)
// and O (32); up to 8 k-steps (d ≤ 64 tf32, d ≤ 128 bf16) that fits the 232 registers of a consumer.
inline constexpr int kMaxSteps = 8;
}  // namespace plan_wgmma

// Shared memory (bytes): query (panels, kWgmmaBlockM, 128 B) · stages × [keys (panels, kTileN,
// 128 B) · Vᵀ tile] · β ring (stages × kTileN floats), plus the 1 KiB that aligns the base.
struct plan_wgmma_geometry {
  int panels = 0;
  int query_bytes = 0;
  int key_bytes = 0;
  int stage_bytes = 0;
  int stages = 0;
  int total_bytes = 0;
  bool fits = false;
};

__host__ __device__ inline plan_wgmma_geometry make_plan_wgmma_geometry(int row_words, int max_shared_bytes) {
  plan_wgmma_geometry g;
  g.panels = (row_words + wgmma::kPanelWords - 1) / wgmma::kPanelWords;
  g.query_bytes = g.panels * tile::kWgmmaBlockM * wgmma::kPanelRowBytes;
  g.key_bytes = g.panels * wgmma::kTileN * wgmma::kPanelRowBytes;
  g.stage_bytes = g.key_bytes + plan_wgmma::kValueTileBytes;
  const bool shape_ok = row_words > 0 && row_words % 8 == 0 && row_words / 8 <= plan_wgmma::kMaxSteps;
  for (int stages = plan_wgmma::kMaxStages; stages >= 2; --stages) {
    g.stages = stages;
    g.total_bytes = wgmma::kPanelAlignment + g.query_bytes + stages * (g.stage_bytes + wgmma::kTileN * 4);
    g.fits = shape_ok && g.total_bytes <= max_shared_bytes;
    if (g.fits) break;
  }
  return g;
}

struct plan_wgmma_params {
  const float* key_bias;             // (keys_padded,) β·log₂e, −∞ on padded keys
  const double* row_scaled_sq_norm;  // (rows,) s‖p_i‖²
  double* lse;                       // (rows,)
  double* weighted;                  // (rows, k)
  std::int64_t rows;
  std::int64_t k;
  int key_tiles;                     // keys_padded / kTileN
  int value_tiles;                   // value tiles of a row block (the 1-D grid of the streamed kernel's pairs)
  int stages;                        // make_plan_wgmma_geometry(...).stages
  int stage_bytes;
  int query_bytes;
  float score_scale_log2;            // (2s/ε)·log₂e
  double eps;
};

#if defined(FLASHSINKHORN_WGMMA_ENABLED)

// The online softmax of one 64×128 tile for this thread's rows g and g + 8 (h = 0, 1), β in
// registers (load_tile_bias): folds the tile into the running state, rescales the kHalves O
// accumulators, and writes P (tf32 bits) in the layout of `acc`.
template <int kHalves>
__device__ __forceinline__ void soften_tile(const float (&acc)[wgmma::kAccumulators],
                                            const float2 (&beta)[kTileBiasPairs], float scale, float (&row_max)[2],
                                            float (&row_sum)[2], float (&lse_sum)[2],
                                            float (&o)[kHalves][wgmma::kAccumulatorsN64],
                                            std::uint32_t (&probability)[wgmma::kAccumulators]) {
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    float t[kRowScores];
    const row_max_step step = advance_row_max(row_max[h], tile_row_scores(acc, beta, scale, h, t));
    const float rescale = step.rescale, reference = step.reference;
#pragma unroll
    for (int half = 0; half < kHalves; ++half)
#pragma unroll
      for (int i = 0; i < wgmma::kAccumulatorsN64 / 4; ++i) {
        o[half][4 * i + 2 * h] *= rescale;
        o[half][4 * i + 2 * h + 1] *= rescale;
      }
    float rounded_sums[2] = {row_sum[h] * rescale, 0.f};
    float exact_sums[2] = {lse_sum[h] * rescale, 0.f};
#pragma unroll
    for (int k = 0; k < kRowScores; ++k) {
      const float exact = fast_exp2(t[k] - reference);
      const std::uint32_t bits = to_tf32(exact);
      exact_sums[k % 2] += exact;
      rounded_sums[k % 2] += __uint_as_float(bits);
      probability[4 * (k / 2) + 2 * h + k % 2] = bits;
    }
    row_sum[h] = rounded_sums[0] + rounded_sums[1];
    lse_sum[h] = exact_sums[0] + exact_sums[1];
  }
}

// O += P·V_tile for one 64-column half: 16 k-steps of 8 keys; k-step i's A fragment is P of n8
// group i (rows g, g + 8; slots t ↔ key 2t, t + 4 ↔ key 2t + 1), B the i-th 32-byte step of the
// permuted Vᵀ panels at `values_address`. Issued and committed as one group.
__device__ __forceinline__ void issue_tile_values(float (&o)[wgmma::kAccumulatorsN64],
                                                  const std::uint32_t (&probability)[wgmma::kAccumulators],
                                                  std::uint32_t values_address) {
  wgmma::pin(o);
  wgmma::fence();
  const std::uint64_t b0 = wgmma::make_descriptor(values_address);
#pragma unroll
  for (int i = 0; i < wgmma::kTileN / 8; ++i) {
    const std::uint32_t a[4] = {probability[4 * i], probability[4 * i + 2], probability[4 * i + 1],
                                probability[4 * i + 3]};
    const int b = (i / 4) * plan_wgmma::kValuePanelBytes + (i % 4) * wgmma::kStepBytes;
    wgmma::mma_tf32_n64(o, a, b0 + (b >> 4), 1);
  }
  wgmma::commit_group();
  wgmma::pin(o);
}

// A consumer's rows leave: the quad's sums, then lse (value tile 0) and this thread's columns of
// O / l (value tile `value_tile` of kHalves·kValueCols columns).
template <int kHalves>
__device__ __forceinline__ void leave_plan_rows(const plan_wgmma_params& p, std::int64_t row_block0, int value_tile,
                                                const float (&row_max)[2], const float (&row_sum)[2],
                                                const float (&lse_sum)[2],
                                                const float (&o)[kHalves][wgmma::kAccumulatorsN64]) {
  const int warpgroup = threadIdx.x / 128;
  const int warp = (threadIdx.x % 128) / 32;
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    float l = row_sum[h], exact = lse_sum[h];
    l += __shfl_xor_sync(0xffffffffu, l, 1);
    l += __shfl_xor_sync(0xffffffffu, l, 2);
    exact += __shfl_xor_sync(0xffffffffu, exact, 1);
    exact += __shfl_xor_sync(0xffffffffu, exact, 2);
    const std::int64_t row = row_block0 + warpgroup * 64 + warp * 16 + h * 8 + lane / 4;
    if (row >= p.rows) continue;
    if (value_tile == 0 && lane % 4 == 0)
      p.lse[row] = static_cast<double>(row_max[h]) * 0.69314718055994530942 + log(static_cast<double>(exact)) -
                   p.row_scaled_sq_norm[row] / p.eps;
    const double inverse = l > 0 ? 1.0 / static_cast<double>(l) : 0.0;
#pragma unroll
    for (int half = 0; half < kHalves; ++half)
#pragma unroll
      for (int i = 0; i < wgmma::kAccumulatorsN64 / 4; ++i)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const std::int64_t column = (static_cast<std::int64_t>(value_tile) * kHalves + half) * plan_wgmma::kValueCols +
                                      8 * i + 2 * (lane % 4) + e;
          if (column < p.k) p.weighted[row * p.k + column] = static_cast<double>(o[half][4 * i + 2 * h + e]) * inverse;
        }
  }
}

#endif  // FLASHSINKHORN_WGMMA_ENABLED

// The work of a CTA of the Hopper plan passes: a block of kWgmmaBlockM rows and one value tile. The
// (row blocks, value tiles) grid is read with the value tile fastest (part_fastest_cell): the CTAs
// of a row block run side by side and stream the same query and key panels (the streamed kernel
// reads them again for every key tile), so L2 serves all but the first.
struct plan_cta_work {
  std::int64_t row_block0;
  int value_tile;
};

__device__ __forceinline__ plan_cta_work plan_cta_work_of() {
  const grid_cell cell =
      part_fastest_cell(blockIdx.x + static_cast<std::int64_t>(blockIdx.y) * gridDim.x, static_cast<int>(gridDim.y));
  return {cell.row_block * tile::kWgmmaBlockM, cell.part};
}

// The streamed kernel's cluster pairs (plan_wgmma_streamed_kernel.cuh): a 1-D grid of row blocks ×
// an even number of value tiles, the value tile fastest, so CTAs 2q and 2q + 1 — a cluster — hold
// value tiles 2q', 2q' + 1 of one row block.
__device__ __forceinline__ plan_cta_work plan_pair_cta_work_of(const plan_wgmma_params& p) {
  const grid_cell cell = part_fastest_cell(blockIdx.x, p.value_tiles);
  return {cell.row_block * tile::kWgmmaBlockM, cell.part};
}

// kSteps: 32-byte k-steps of a row of points (Q·Kᵀ), ≤ plan_wgmma::kMaxSteps. Grid: (row blocks of
// kWgmmaBlockM, value tiles of kValueCols); every value tile recomputes the scores.
template <class Op, int kSteps>
__global__ void __launch_bounds__(tile::kWgmmaWsThreads, 1)
    plan_wgmma_kernel(const plan_wgmma_params p, const __grid_constant__ CUtensorMap rows_map,
                      const __grid_constant__ CUtensorMap keys_map, const __grid_constant__ CUtensorMap values_map) {
#if defined(FLASHSINKHORN_WGMMA_ENABLED)
  static_assert(kSteps <= plan_wgmma::kMaxSteps);
  extern __shared__ __align__(16) unsigned char shared_raw[];
  __shared__ __align__(8) std::uint64_t full[plan_wgmma::kMaxStages];
  __shared__ __align__(8) std::uint64_t empty[plan_wgmma::kMaxStages];
  __shared__ __align__(8) std::uint64_t query_full;
  unsigned char* shared = panel_aligned(shared_raw);

  constexpr int kRowWords = kSteps * wgmma::kStepBytes / 4;
  constexpr int kPanels = (kRowWords + wgmma::kPanelWords - 1) / wgmma::kPanelWords;
  constexpr int kKeyBytes = kPanels * wgmma::kTileN * wgmma::kPanelRowBytes;
  const int stages = p.stages;
  const plan_cta_work work = plan_cta_work_of();
  const std::int64_t row_block0 = work.row_block0;
  const int value_tile = work.value_tile;

  unsigned char* query = shared;
  unsigned char* ring = shared + p.query_bytes;  // stages × (keys · Vᵀ tile)
  float* bias_ring = reinterpret_cast<float*>(ring + stages * p.stage_bytes);
  auto stage_at = [&](const tma::ring_position& at) { return ring + at.stage * p.stage_bytes; };
  auto bias_at = [&](const tma::ring_position& at) { return bias_ring + at.stage * wgmma::kTileN; };

  if (threadIdx.x == 0) tma::init_ring_barriers(full, empty, stages, tile::kWgmmaThreads, &query_full);
  __syncthreads();

  if (threadIdx.x >= tile::kWgmmaThreads) {
    wgmma::release_registers<tile::kWgmmaWsProducerRegisters>();
    if (threadIdx.x == tile::kWgmmaThreads) {
      load_query_block<kPanels>(query, &rows_map, row_block0, &query_full);
      tma::ring_position at;
      for (int t = 0; t < p.key_tiles; ++t, at.advance(stages)) {
        if (t >= stages) tma::wait_or_trap(&empty[at.stage], at.parity ^ 1);
        const int key0 = t * wgmma::kTileN;
        unsigned char* stage = stage_at(at);
        tma::arrive_expect_bytes(&full[at.stage], kKeyBytes + plan_wgmma::kValueTileBytes + wgmma::kTileN * 4);
#pragma unroll
        for (int c = 0; c < kPanels; ++c)
          tma::load_2d(stage + c * wgmma::kTileN * wgmma::kPanelRowBytes, &keys_map, c * wgmma::kPanelWords, key0,
                       &full[at.stage]);
#pragma unroll
        for (int c = 0; c < plan_wgmma::kValuePanels; ++c)
          tma::load_2d(stage + kKeyBytes + c * plan_wgmma::kValuePanelBytes, &values_map,
                       key0 + c * wgmma::kPanelWords, value_tile * plan_wgmma::kValueCols, &full[at.stage]);
        tma::load_1d(bias_at(at), p.key_bias + key0, wgmma::kTileN * 4, &full[at.stage]);
      }
    }
    __syncwarp();
    return;
  }

  wgmma::claim_registers<tile::kWgmmaWsConsumerRegisters>();
  float row_max[2] = {-INFINITY, -INFINITY};  // rows g and g + 8 of this warp's 16
  float row_sum[2] = {0.f, 0.f};              // Σ of the rounded P (normalises O)
  float lse_sum[2] = {0.f, 0.f};              // Σ of the unrounded P (the LSE)
  float scores[wgmma::kAccumulators];
  float o[1][wgmma::kAccumulatorsN64];
#pragma unroll
  for (int i = 0; i < wgmma::kAccumulatorsN64; ++i) o[0][i] = 0.f;
  std::uint32_t probability[wgmma::kAccumulators];
  std::uint32_t query_fragments[kSteps][4];
  tma::wait(&query_full, 0);
  load_query_fragments<kSteps>(query_fragments, query);

  tma::ring_position at;
  for (int t = 0; t < p.key_tiles; ++t, at.advance(stages)) {
    tma::wait(&full[at.stage], at.parity);
    const std::uint32_t stage = smem_address(stage_at(at));
    issue_tile_scores<Op, kSteps>(scores, query_fragments, stage);
    wgmma::wait_group<0>();
    wgmma::pin(scores);
    float2 beta[kTileBiasPairs];
    load_tile_bias(beta, bias_at(at));
    soften_tile<1>(scores, beta, p.score_scale_log2, row_max, row_sum, lse_sum, o, probability);
    issue_tile_values(o[0], probability, stage + kKeyBytes);
    wgmma::wait_group<0>();
    wgmma::pin(o[0]);
    tma::arrive(&empty[at.stage]);
  }
  leave_plan_rows<1>(p, row_block0, value_tile, row_max, row_sum, lse_sum, o);

#elif defined(__CUDA_ARCH__)
  __trap();  // the launcher selects this kernel only on sm_90a builds running on sm_90
#endif
}

}  // namespace flashsinkhorn::detail::kernels
