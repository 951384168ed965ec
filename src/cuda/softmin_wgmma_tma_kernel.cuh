// The resident Hopper softmin kernel with the copy engine and per-stage barriers instead of
// cp.async and a CTA barrier per tile (the bf16 default, FLASHSINKHORN_KERNEL=tma: kernel_variant.hpp).
// Against the cp.async kernel on the H200 (gpu_check, 2026-11-30, ms per iteration, tf32/bf16):
// n = 50,000, d = 64: 3.81/2.83 → 2.94/2.52; d = 8: 2.45/2.44 → 2.31/2.32; n = 10,000, d = 64:
// 0.188/0.146 → 0.147/0.117; n = 200,000, d = 64: 59.8/44.3 → 54.3/39.3.
//
// Same tiles, layout and reduction as softmin_wgmma_kernel.cuh. What changes is the coupling of
// the two warpgroups: there, every tile ends in a CTA barrier, so both warpgroups run their MMAs
// and their exponentials at the same time; here each waits only for its own data:
//   full[s]   one arrival (the producer's expect_tx) + the bytes of the stage's TMA copies;
//   empty[s]  kWgmmaThreads arrivals, one per thread after its MMAs of that stage completed and
//             its reduce read the stage's β.
// The producer is thread 0. At step j (after its own reduce of tile j) it refills the stage of
// tile j − 1 with tile j + S − 1, waiting on that stage's empty barrier: the other warpgroup may
// run up to a tile behind without stalling it. Keys and β of a tile land on the same barrier.
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/softmin_kernel.cuh"
#include "cuda/softmin_wgmma_kernel.cuh"
#include "cuda/tile_config.hpp"
#include "cuda/tma.cuh"
#include "cuda/tma_tile_copies.cuh"
#include "cuda/wgmma.cuh"

namespace flashsinkhorn::detail::kernels {

template <class Op, int kSteps>
__global__ void __launch_bounds__(tile::kWgmmaThreads, tile::kWgmmaCtasPerSm)
    softmin_wgmma_tma_kernel(const softmin_params p, const __grid_constant__ CUtensorMap rows_map,
                             const __grid_constant__ CUtensorMap keys_map) {
#if defined(FLASHSINKHORN_WGMMA_ENABLED)
  extern __shared__ __align__(16) unsigned char shared_raw[];
  __shared__ double error_scratch[tile::kWgmmaThreads / 32];
  __shared__ __align__(8) std::uint64_t full[tile::kWgmmaMaxStages];
  __shared__ __align__(8) std::uint64_t empty[tile::kWgmmaMaxStages];
  __shared__ __align__(8) std::uint64_t query_full;
  unsigned char* shared = panel_aligned(shared_raw);

  const std::int64_t row_words64 = p.padded_dim * static_cast<std::int64_t>(sizeof(typename Op::storage)) / 4;
  const wgmma_geometry geo = make_wgmma_geometry(row_words64, p.max_shared_bytes);
  constexpr int kRowWords = kSteps * wgmma::kStepBytes / 4;  // == geo.row_words (the launcher's choice)
  constexpr int kPanels = (kRowWords + wgmma::kPanelWords - 1) / wgmma::kPanelWords;
  const int stages = geo.stages;
  const cta_work work = cta_work_of(p);  // (not a structured binding: the lambdas below capture these)
  const std::int64_t row_block0 = work.row_block0;
  const int split = work.split, tile_begin = work.tile_begin, tiles = work.tiles;
  const float* key_bias = static_cast<const float*>(p.key_bias);

  unsigned char* query = shared;                  // (panels, kWgmmaBlockM, 128 B)
  unsigned char* ring = shared + geo.query_bytes;  // stages × keys (panels, kTileN, 128 B)
  float* bias_ring = reinterpret_cast<float*>(ring + stages * geo.stage_bytes);  // (stages, kTileN)
  auto stage_at = [&](int stage) { return ring + stage * geo.stage_bytes; };
  auto bias_at = [&](int stage) { return bias_ring + stage * wgmma::kTileN; };
  const bool producer = threadIdx.x == 0;

  if (producer) tma::init_ring_barriers(full, empty, stages, tile::kWgmmaThreads, &query_full);
  __syncthreads();

  auto issue_tile = [&](int t, int stage) {  // producer only: tile t into `stage` (t mod stages)
    load_key_tile<kPanels>(stage_at(stage), bias_at(stage), &keys_map, key_bias, (tile_begin + t) * wgmma::kTileN,
                           &full[stage]);
  };
  if (producer) {
    load_query_block<kPanels>(query, &rows_map, row_block0, &query_full);
    for (int t = 0; t < stages && t < tiles; ++t) issue_tile(t, t);
  }
  __syncwarp();

  const int warpgroup = threadIdx.x / 128;
  const std::uint32_t query_address = smem_address(query) + warpgroup * 64 * wgmma::kPanelRowBytes;
  float row_max[2] = {-INFINITY, -INFINITY};  // rows g and g + 8 of this warp's 16
  float row_sum[2] = {0.f, 0.f};

  tma::wait(&query_full, 0);
  float acc[wgmma::kAccumulators];  // (64 rows, 128 keys) of this warpgroup, layout of wgmma.cuh
  // The ring positions of tiles j and j − 1, advanced by one a step (no run-time division: a
  // divide by `stages` costs ~40 instructions and two MUFU.RCP a tile, bench/studies/sass_loop_mix.py).
  tma::ring_position at, before;
  for (int j = 0; j < tiles; ++j) {
    tma::wait(&full[at.stage], at.parity);
    issue_tile_scores<Op, kSteps>(acc, query_address, smem_address(stage_at(at.stage)));
    wgmma::wait_group<0>();
    wgmma::pin(acc);
    reduce_score_tile(acc, bias_at(at.stage), p.score_scale_log2, row_max, row_sum);
    tma::arrive(&empty[at.stage]);
    // Refill the stage of tile j − 1 (its empty phase completes once the other warpgroup is done
    // with tile j − 1, i.e. it may lag by a tile without stalling this one).
    const int refill = j - 1 + stages;
    if (producer && j >= 1 && refill < tiles) {
      tma::wait(&empty[before.stage], before.parity);
      issue_tile(refill, before.stage);  // refill ≡ j − 1 (mod stages)
    }
    if (j >= 1) before.advance(stages);
    at.advance(stages);
    __syncwarp();  // warp 0 whole again before the next wgmma (.sync.aligned)
  }
  // Tiles 0 … stages − 1 were issued up front; a split shorter than the ring left no copy pending.
  finish_warpgroup_rows(p, row_block0, split, row_max, row_sum, error_scratch);
#elif defined(__CUDA_ARCH__)
  __trap();  // the launcher selects this kernel only on sm_90a builds running on sm_90
#endif
}

}  // namespace flashsinkhorn::detail::kernels
