// The Hopper plan pass for wide rows (more than plan_wgmma::kMaxSteps k-steps: the query block no
// longer fits in registers): plan_wgmma_kernel.cuh's tile math with the panel stream of
// softmin_wgmma_ws_streamed_kernel.cuh, and kHalves × 64 value columns per CTA (fewer CTAs
// recomputing the scores when k is large).
//
// One CTA per SM: a producer warpgroup whose first thread loads, per 128-key tile, the tile's
// (key panel, query panel) pairs one per ring stage, then its Vᵀ tile in kHalves stages of 64
// columns (4 panels of 32 keys each) — every stage 32 KiB, full/empty barriers per stage — and two
// consumer warpgroups (64 rows each) that per tile
//   S = Σ_panels Q_c·K_cᵀ     one wgmma group of 4 k-steps per panel, A and B from shared memory,
//                            one group in flight (a stage is released when the next group issued)
//   online softmax           as in plan_wgmma_kernel.cuh, β from global memory (L2)
//   O_h += P·V_h             per half h, A = P from registers
//
// kPairing (FLASHSINKHORN_PLAN_CLUSTER_PAIRS; a pair is launched as a cluster of two CTAs along a
// 1-D grid, plan_pair_cta_work_of): the two CTAs hold value tiles 2q, 2q + 1 of one row block, so
// they need the same scores S from the same panels.
//   multicast      each producer loads half of every key panel and half of every query panel (the
//                  maps' boxes are 64 rows) into both CTAs' stages by multicast, which halves the
//                  panel stream through L2 (at k = 512 tf32 a key tile streams 16 score stages and 2
//                  value stages a CTA: 576 KiB through L2, 320 KiB in pairs). Every stage, a score
//                  stage or not, is released to both producers (one arrival per consumer warp on
//                  each CTA's empty barrier), so the two rings advance together. Each CTA still
//                  computes all of S.
//   split_scores   CTA r loads and multiplies only the panels c ≡ r (mod 2), whole and alone, and
//                  the two add their partial sums through distributed shared memory
//                  (score_exchange.cuh): the panel stream halves as with multicast, and so does
//                  the tensor-core work of S, the larger part of a tile's at k ≥ 256 (S: k-deep
//                  products over 128 keys; P·V: 128 value columns). The ring gives 64 KiB to the
//                  inbox (5 stages instead of 6 on the H100). Needs at least 2 panels.
// The value stages stay each CTA's own.
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/plan_pairing.hpp"
#include "cuda/plan_wgmma_kernel.cuh"
#include "cuda/score_exchange.cuh"
#include "cuda/softmin_wgmma_ws_streamed_kernel.cuh"
#include "cuda/tma.cuh"
#include "cuda/wgmma.cuh"

namespace flashsinkhorn::detail::kernels {

namespace plan_wgmma_streamed {
inline constexpr int kStageBytes = (wgmma::kTileN + tile::kWgmmaBlockM) * wgmma::kPanelRowBytes;  // 32 KiB
static_assert(kStageBytes == plan_wgmma::kValueTileBytes, "a Vᵀ half fills one stage exactly");
inline constexpr int kMaxStages = 6;
}  // namespace plan_wgmma_streamed

// Bytes of shared memory a CTA sets aside beside its ring for `pairing`.
__host__ __device__ constexpr int plan_pairing_extra_bytes(plan_pairing pairing) {
  return pairing == plan_pairing::split_scores ? score_exchange::kInboxBytes : 0;
}

// Ring depth for a device's opt-in shared memory (at least 3 stages: one group in flight per
// consumer plus the stage being filled); 0 when even that does not fit.
__host__ __device__ inline int plan_wgmma_streamed_stages(int max_shared_bytes) {
  for (int stages = plan_wgmma_streamed::kMaxStages; stages >= 3; --stages)
    if (wgmma::kPanelAlignment + stages * plan_wgmma_streamed::kStageBytes <= max_shared_bytes) return stages;
  return 0;
}

template <class Op, int kHalves, plan_pairing kPairing = plan_pairing::none>
__global__ void __launch_bounds__(tile::kWgmmaWsThreads, 1)
    plan_wgmma_streamed_kernel(const plan_wgmma_params p, int panels, const __grid_constant__ CUtensorMap rows_map,
                               const __grid_constant__ CUtensorMap keys_map,
                               const __grid_constant__ CUtensorMap values_map) {
#if defined(FLASHSINKHORN_WGMMA_ENABLED)
  constexpr bool kPaired = kPairing != plan_pairing::none;
  constexpr bool kMulticast = kPairing == plan_pairing::multicast;  // stages filled by both producers
  constexpr bool kSplitScores = kPairing == plan_pairing::split_scores;
  extern __shared__ __align__(16) unsigned char shared_raw[];
  __shared__ __align__(8) std::uint64_t full[plan_wgmma_streamed::kMaxStages];
  __shared__ __align__(8) std::uint64_t empty[plan_wgmma_streamed::kMaxStages];
  __shared__ __align__(8) std::uint64_t inbox_landed[score_exchange::kWarpgroups];
  __shared__ __align__(8) std::uint64_t inbox_read[score_exchange::kWarpgroups];
  unsigned char* ring = panel_aligned(shared_raw);
  constexpr int kKeyPanelBytes = wgmma::kTileN * wgmma::kPanelRowBytes;
  const int stages = p.stages;
  const unsigned rank = kPaired ? tma::cluster_rank() : 0u;
  const plan_cta_work work = kPaired ? plan_pair_cta_work_of(p) : plan_cta_work_of();
  const std::int64_t row_block0 = work.row_block0;
  const int value_tile = work.value_tile;
  // The score panels this CTA multiplies: c = first_panel, first_panel + panel_step, … < panels.
  const int first_panel = kSplitScores ? static_cast<int>(rank) : 0;
  constexpr int panel_step = kSplitScores ? 2 : 1;
  auto stage_at = [&](const tma::ring_position& at) { return ring + at.stage * plan_wgmma_streamed::kStageBytes; };
  [[maybe_unused]] const score_inbox inbox{smem_address(ring + stages * plan_wgmma_streamed::kStageBytes), inbox_landed,
                                           inbox_read};

  if (threadIdx.x == 0) {
    tma::init_ring_barriers(full, empty, stages, tma::stage_releases<kMulticast>(tile::kWgmmaThreads));
    if constexpr (kSplitScores) init_score_inbox(inbox);
  }
  __syncthreads();
  if constexpr (kPaired) tma::cluster_sync();  // the partner's barriers exist before a copy or arrival reaches them

  if (threadIdx.x >= tile::kWgmmaThreads) {
    wgmma::release_registers<tile::kWgmmaWsProducerRegisters>();
    if (threadIdx.x == tile::kWgmmaThreads) {
      tma::ring_position at;
      int load = 0;
      auto next_stage = [&]() {
        if (load >= stages) tma::wait_or_trap(&empty[at.stage], at.parity ^ 1);  // its previous use released
        tma::arrive_expect_bytes(&full[at.stage], plan_wgmma_streamed::kStageBytes);
        return stage_at(at);
      };
      auto advance = [&]() {
        at.advance(stages);
        ++load;
      };
      for (int t = 0; t < p.key_tiles; ++t) {
        const int key0 = t * wgmma::kTileN;
        for (int c = first_panel; c < panels; c += panel_step, advance()) {
          unsigned char* stage = next_stage();
          if constexpr (kMulticast) {
            constexpr int kHalfRows = wgmma::kTileN / 2;  // = kWgmmaBlockM / 2: key and query panels alike
            const int offset = static_cast<int>(rank) * kHalfRows;
            tma::load_2d_multicast(stage + offset * wgmma::kPanelRowBytes, &keys_map, c * wgmma::kPanelWords,
                                   key0 + offset, &full[at.stage], 0b11);
            tma::load_2d_multicast(stage + kKeyPanelBytes + offset * wgmma::kPanelRowBytes, &rows_map,
                                   c * wgmma::kPanelWords, static_cast<int>(row_block0) + offset, &full[at.stage],
                                   0b11);
          } else {
            tma::load_2d(stage, &keys_map, c * wgmma::kPanelWords, key0, &full[at.stage]);
            tma::load_2d(stage + kKeyPanelBytes, &rows_map, c * wgmma::kPanelWords, static_cast<int>(row_block0),
                         &full[at.stage]);
          }
        }
        for (int half = 0; half < kHalves; ++half, advance()) {
          unsigned char* stage = next_stage();
          const int column0 = (value_tile * kHalves + half) * plan_wgmma::kValueCols;
#pragma unroll
          for (int c = 0; c < plan_wgmma::kValuePanels; ++c)
            tma::load_2d(stage + c * plan_wgmma::kValuePanelBytes, &values_map, key0 + c * wgmma::kPanelWords, column0,
                         &full[at.stage]);
        }
      }
    }
    __syncwarp();
    if constexpr (kPaired) tma::cluster_sync();  // (the consumers' is below, before they leave)
    return;
  }

  wgmma::claim_registers<tile::kWgmmaWsConsumerRegisters>();
  const int warpgroup = threadIdx.x / 128;
  float row_max[2] = {-INFINITY, -INFINITY};
  float row_sum[2] = {0.f, 0.f};
  float lse_sum[2] = {0.f, 0.f};
  float scores[wgmma::kAccumulators];
  float o[kHalves][wgmma::kAccumulatorsN64];
#pragma unroll
  for (int half = 0; half < kHalves; ++half)
#pragma unroll
    for (int i = 0; i < wgmma::kAccumulatorsN64; ++i) o[half][i] = 0.f;
  std::uint32_t probability[wgmma::kAccumulators];
  tma::ring_position ahead, behind;  // the next stage to consume, the oldest not yet released
  int unreleased = 0;
  auto retire = [&](int pending) {  // after wgmma::wait_group<pending>
    for (; unreleased > pending; --unreleased) {
      tma::release_stage<kMulticast>(&empty[behind.stage], rank);
      behind.advance(stages);
    }
  };

  for (int t = 0; t < p.key_tiles; ++t) {
    float2 beta[kTileBiasPairs];
    load_tile_bias(beta, p.key_bias + static_cast<std::int64_t>(t) * wgmma::kTileN);
    for (int c = first_panel; c < panels; c += panel_step) {
      tma::wait(&full[ahead.stage], ahead.parity);
      const std::uint32_t key_address = smem_address(stage_at(ahead));
      const std::uint32_t query_address = key_address + kKeyPanelBytes + warpgroup * 64 * wgmma::kPanelRowBytes;
      wgmma::pin(scores);
      wgmma::fence();
      const std::uint64_t a0 = wgmma::make_descriptor(query_address);
      const std::uint64_t b0 = wgmma::make_descriptor(key_address);
#pragma unroll
      for (int s = 0; s < wgmma::kPanelRowBytes / wgmma::kStepBytes; ++s)
        Op::mma(scores, a0 + (s * wgmma::kStepBytes >> 4), b0 + (s * wgmma::kStepBytes >> 4),
                (c > first_panel || s > 0) ? 1 : 0);
      wgmma::commit_group();
      wgmma::pin(scores);
      ahead.advance(stages);
      ++unreleased;
      wgmma::wait_group<1>();
      retire(1);
    }
    wgmma::wait_group<0>();
    retire(0);
    wgmma::pin(scores);
    if constexpr (kSplitScores) exchange_scores(inbox, scores, warpgroup, t, rank ^ 1u);
    soften_tile<kHalves>(scores, beta, p.score_scale_log2, row_max, row_sum, lse_sum, o, probability);
#pragma unroll
    for (int half = 0; half < kHalves; ++half) {
      tma::wait(&full[ahead.stage], ahead.parity);
      issue_tile_values(o[half], probability, smem_address(stage_at(ahead)));
      ahead.advance(stages);
      ++unreleased;
    }
    wgmma::wait_group<0>();
#pragma unroll
    for (int half = 0; half < kHalves; ++half) wgmma::pin(o[half]);
    retire(0);
  }
  if constexpr (kPaired) tma::cluster_sync();  // nothing of the partner's is still on its way here
  leave_plan_rows<kHalves>(p, row_block0, value_tile, row_max, row_sum, lse_sum, o);
#elif defined(__CUDA_ARCH__)
  __trap();  // the launcher selects this kernel only on sm_90a builds running on sm_90
#endif
}

}  // namespace flashsinkhorn::detail::kernels
