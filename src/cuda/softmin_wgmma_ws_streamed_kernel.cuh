// The warp-specialised Hopper softmin kernel for wide rows (more than kWgmmaMaxRowWords words; the
// default, kernel_variant.hpp): the cp.async streamed kernel's panels (softmin_wgmma_streamed_kernel.cuh)
// with the roles of softmin_wgmma_ws_kernel.cuh. Against that kernel (H200, 2026-11-30, n = 50,000,
// d = 512, ms per iteration, tf32/bf16): 36.3/18.5 → 16.2/8.97, 80%/74% of the roofline floor.
//
// One CTA per SM: a producer warpgroup (40 registers) whose first thread loads, per (key tile t,
// panel c) in order, the keys' and the queries' 32-word panel c into the next ring stage through the
// copy engine (full/empty barriers per stage, up to kWgmmaWsStreamedMaxStages stages of 32 KiB), and
// two consumer warpgroups (232 registers) with two accumulator sets. A consumer issues each panel's
// 4 k-steps as one wgmma group, keeps kLead groups in flight and releases a stage once the group
// that read it completed; at the end of tile j it first issues the first kLead panels of tile
// j + 1 into the other set, then reduces tile j while they run. β is read from global memory (L2)
// into registers before the wait.
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "cuda/softmin_kernel.cuh"
#include "cuda/softmin_wgmma_kernel.cuh"
#include "cuda/tile_config.hpp"
#include "cuda/tma.cuh"
#include "cuda/wgmma.cuh"

namespace flashsinkhorn::detail::kernels {

// Shared-memory plan (host and device), bytes: a stage is a key panel (kTileN, 128 B) and a query
// panel (kWgmmaBlockM, 128 B).
struct wgmma_ws_streamed_geometry {
  int panels = 0;  // 32-word panels per row
  int stage_bytes = 0;
  int stages = 0;
  int total_bytes = 0;  // including the 1024-byte alignment slack
  bool fits = false;
};

__host__ __device__ inline wgmma_ws_streamed_geometry make_wgmma_ws_streamed_geometry(std::int64_t row_words,
                                                                                      int max_shared_bytes) {
  wgmma_ws_streamed_geometry g;
  g.panels = static_cast<int>(row_words / wgmma::kPanelWords);
  g.stage_bytes = (wgmma::kTileN + tile::kWgmmaBlockM) * wgmma::kPanelRowBytes;
  const bool shape_ok = row_words > 0 && row_words % wgmma::kPanelWords == 0 && g.panels >= 2;
  // At a tile boundary a consumer holds up to 2·kWsStreamedLead stages (the last groups of tile j
  // and the first of tile j + 1) before it releases any: the ring needs one more.
  for (int stages = tile::kWgmmaWsStreamedMaxStages; stages >= 2 * tile::kWgmmaWsStreamedLead + 1; --stages) {
    g.stages = stages;
    g.total_bytes = wgmma::kPanelAlignment + stages * g.stage_bytes;
    g.fits = shape_ok && g.total_bytes <= max_shared_bytes;
    if (g.fits) break;
  }
  return g;
}

// kKeyPairs (FLASHSINKHORN_STREAMED_KEY_PAIRS; launched in clusters of two CTAs, pair_cta_work_of):
// the two CTAs of a cluster hold two row blocks of one split, and each producer loads half of every
// key panel (the maps' boxes are kTileN/2 rows) into both CTAs' stages by multicast, halving the
// key stream through L2 (docs/cuda_backend.md, "What binds the streamed softmin now"); its query
// panel it loads alone. A query pair (two splits of an odd count's last row block) does the
// converse: rank 0 loads the query panel (one 128-row box) into both CTAs, each loads its own keys.
// A stage is then written by both producers, so it is released to both (tma::release_stage).
//
// The producer decides once, outside its loop, which kind of CTA it serves (a key pair, a query
// pair), so a key pair's loop is two copies a stage and no test. History (H100, 5·10⁴ × 1,024
// tf32, ms an iteration): with a per-stage test of the CTA's kind the key pairs ran 39.1 against 34.2
// (bisected to 429ddc6..bdc16db, key_pairs_bisect_h100_2026-12-06_s43.json); with the test hoisted
// but the rows map's box halved for the query pairs (a key pair then loaded its query panel in two
// copies a stage) 37.6 against 34.6 (streamed_l2_ab_h100_2026-12-06_s44.json); with one box for the
// query panel 35.0 (…_s44b.json; 34.8 in session 44's instance without the query-pair loop, since
// folded into this one).
template <class Op, bool kKeyPairs = false>
__global__ void __launch_bounds__(tile::kWgmmaWsThreads, 1)
    softmin_wgmma_ws_streamed_kernel(const softmin_params p, const __grid_constant__ CUtensorMap rows_map,
                                     const __grid_constant__ CUtensorMap keys_map) {
#if defined(FLASHSINKHORN_WGMMA_ENABLED)
  extern __shared__ __align__(16) unsigned char shared_raw[];
  __shared__ double error_scratch[tile::kWgmmaWsThreads / 32];
  __shared__ __align__(8) std::uint64_t full[tile::kWgmmaWsStreamedMaxStages];
  __shared__ __align__(8) std::uint64_t empty[tile::kWgmmaWsStreamedMaxStages];
  unsigned char* ring = panel_aligned(shared_raw);

  const std::int64_t row_words = p.padded_dim * static_cast<std::int64_t>(sizeof(typename Op::storage)) / 4;
  const wgmma_ws_streamed_geometry geo = make_wgmma_ws_streamed_geometry(row_words, p.max_shared_bytes);
  const int panels = geo.panels;
  const int stages = geo.stages;
  const unsigned rank = kKeyPairs ? tma::cluster_rank() : 0u;  // which half of each key panel this CTA loads
  const pair_cta_work pair = kKeyPairs ? pair_cta_work_of(p, rank) : pair_cta_work{cta_work_of(p), false, false};
  const cta_work work = pair.work;  // (not a structured binding: the lambdas below capture these)
  const std::int64_t row_block0 = work.row_block0;
  const int split = work.split, tile_begin = work.tile_begin, tiles = work.tiles;
  const float* key_bias = static_cast<const float*>(p.key_bias);
  constexpr int kKeyPanelBytes = wgmma::kTileN * wgmma::kPanelRowBytes;
  auto stage_at = [&](const tma::ring_position& at) { return ring + at.stage * geo.stage_bytes; };

  if (threadIdx.x == 0)
    tma::init_ring_barriers(full, empty, stages, tma::stage_releases<kKeyPairs>(tile::kWgmmaThreads));
  __syncthreads();
  if constexpr (kKeyPairs) tma::cluster_sync();  // the partner's barriers exist before a copy or arrival reaches them

  double error = 0;
  if (threadIdx.x >= tile::kWgmmaThreads) {
    wgmma::release_registers<tile::kWgmmaWsProducerRegisters>();
    if (threadIdx.x == tile::kWgmmaThreads) {
      // One loop per kind of CTA, the kind decided once: with a test of it in the per-stage code
      // the key pairs ran 13% slower (key_pairs_bisect_h100_2026-12-06_s43.json).
      auto produce = [&](auto shares_queries) {
        constexpr std::uint32_t kStageBytes = (wgmma::kTileN + tile::kWgmmaBlockM) * wgmma::kPanelRowBytes;
        constexpr int kHalfRows = wgmma::kTileN / 2;
        constexpr int kHalfBytes = kHalfRows * wgmma::kPanelRowBytes;
        static_assert(wgmma::kTileN == tile::kWgmmaBlockM, "key and query panels split into the same halves");
        tma::ring_position at;
        const int loads = tiles * panels;
        for (int l = 0, t = 0, c = 0; l < loads; ++l, at.advance(stages)) {
          if (l >= stages) tma::wait_or_trap(&empty[at.stage], at.parity ^ 1);  // its previous use released
          std::uint64_t* barrier = &full[at.stage];
          tma::arrive_expect_bytes(barrier, kStageBytes);
          unsigned char* stage = stage_at(at);
          unsigned char* query_panel = stage + kKeyPanelBytes;
          const int column = c * wgmma::kPanelWords;
          const int key_row = (tile_begin + t) * wgmma::kTileN, query_row = static_cast<int>(row_block0);
          if constexpr (decltype(shares_queries)::value) {  // a query pair: rank 0's query panel into both
            if (rank == 0) tma::load_2d_multicast(query_panel, &rows_map, column, query_row, barrier, 0b11);
            tma::load_2d(stage, &keys_map, column, key_row, barrier);  // its own keys, in two 64-row boxes
            tma::load_2d(stage + kHalfBytes, &keys_map, column, key_row + kHalfRows, barrier);
          } else if constexpr (kKeyPairs) {  // a key pair: its half of the key panel into both
            tma::load_2d_multicast(stage + rank * kHalfBytes, &keys_map, column, key_row + static_cast<int>(rank) * kHalfRows,
                                   barrier, 0b11);
            tma::load_2d(query_panel, &rows_map, column, query_row, barrier);  // its own query panel
          } else {
            tma::load_2d(stage, &keys_map, column, key_row, barrier);
            tma::load_2d(query_panel, &rows_map, column, query_row, barrier);
          }
          if (++c == panels) c = 0, ++t;
        }
      };
      if constexpr (kKeyPairs) {
        if (pair.shares_queries) produce(std::true_type{});
        else produce(std::false_type{});
      } else {
        produce(std::false_type{});
      }
    }
    __syncwarp();
  } else {
    wgmma::claim_registers<tile::kWgmmaWsConsumerRegisters>();
    const int warpgroup = threadIdx.x / 128;
    float row_max[2] = {-INFINITY, -INFINITY};  // rows g and g + 8 of this warp's 16
    float row_sum[2] = {0.f, 0.f};
    float acc0[wgmma::kAccumulators];  // (64 rows, 128 keys) of this warpgroup, layout of wgmma.cuh
    float acc1[wgmma::kAccumulators];
    tma::ring_position ahead, behind;  // the next stage to issue from, the oldest not yet released
    int unreleased = 0;                // groups issued whose stage is not yet released
    // Panel c of the next tile into `acc`: one wgmma group of 4 k-steps.
    auto issue_panel = [&](float (&acc)[wgmma::kAccumulators], int c) {
      tma::wait(&full[ahead.stage], ahead.parity);
      const std::uint32_t key_address = smem_address(stage_at(ahead));
      const std::uint32_t query_address = key_address + kKeyPanelBytes + warpgroup * 64 * wgmma::kPanelRowBytes;
      wgmma::pin(acc);
      wgmma::fence();
      const std::uint64_t a0 = wgmma::make_descriptor(query_address);
      const std::uint64_t b0 = wgmma::make_descriptor(key_address);
#pragma unroll
      for (int s = 0; s < wgmma::kPanelRowBytes / wgmma::kStepBytes; ++s)
        Op::mma(acc, a0 + (s * wgmma::kStepBytes >> 4), b0 + (s * wgmma::kStepBytes >> 4), (c > 0 || s > 0) ? 1 : 0);
      wgmma::commit_group();
      wgmma::pin(acc);
      ahead.advance(stages);
      ++unreleased;
    };
    // After wgmma::wait_group<kPending>: every older group completed, so their stages are free.
    auto retire = [&](int pending) {
      for (; unreleased > pending; --unreleased) {
        tma::release_stage<kKeyPairs>(&empty[behind.stage], rank);
        behind.advance(stages);
      }
    };
    constexpr int kLead = tile::kWgmmaWsStreamedLead;  // panels of tile j + 1 in flight during tile j's reduce
    // Tile j + 1 (if any) into `next` around the reduce of tile j (in `current`, its last group
    // pending): kLead panels first, then the reduce, then the rest; every completed group releases
    // its stage.
    auto tile_step = [&](float (&current)[wgmma::kAccumulators], float (&next)[wgmma::kAccumulators], int j,
                         bool has_next) {
      float2 beta[kTileBiasPairs];
      load_tile_bias(beta, key_bias + static_cast<std::int64_t>(tile_begin + j) * wgmma::kTileN);
      if (has_next) {
#pragma unroll
        for (int c = 0; c < kLead; ++c) issue_panel(next, c);
        wgmma::wait_group<kLead>();  // tile j's last groups done
        retire(kLead);
        wgmma::pin(current);
        reduce_score_tile(current, beta, p.score_scale_log2, row_max, row_sum);
        for (int c = kLead; c < panels; ++c) {
          issue_panel(next, c);
          wgmma::wait_group<kLead>();
          retire(kLead);
        }
      } else {
        wgmma::wait_group<0>();
        retire(0);
        wgmma::pin(current);
        reduce_score_tile(current, beta, p.score_scale_log2, row_max, row_sum);
      }
    };
    if (tiles > 0) {
      // Tile 0 into acc0: every panel issued, all but the last group retired (stages released).
      for (int c = 0; c < panels; ++c) {
        issue_panel(acc0, c);
        wgmma::wait_group<kLead>();
        retire(kLead);
      }
      int j = 0;
      for (; j + 2 < tiles; j += 2) {
        tile_step(acc0, acc1, j, true);
        tile_step(acc1, acc0, j + 1, true);
      }
      if (j + 1 < tiles) {
        tile_step(acc0, acc1, j, true);
        tile_step(acc1, acc0, j + 1, false);
      } else {
        tile_step(acc0, acc1, j, false);
      }
    }
    if (!pair.ghost) error = leave_warpgroup_rows(p, row_block0, split, row_max, row_sum);
  }
  if constexpr (kKeyPairs) tma::cluster_sync();  // nothing of the partner's is still on its way here
  if (!pair.ghost) finish_block<float>(p, error, error_scratch, row_block0, tile::kWgmmaBlockM);
#elif defined(__CUDA_ARCH__)
  __trap();  // the launcher selects this kernel only on sm_90a builds running on sm_90
#endif
}

}  // namespace flashsinkhorn::detail::kernels
