// The warp-specialised resident Hopper softmin kernel (the tf32 default; FLASHSINKHORN_KERNEL=ws,
// kernel_variant.hpp): the copy-engine kernel's tiles, layout and reduction
// (softmin_wgmma_tma_kernel.cuh) with the roles split the FlashAttention-3 way.
//
// One CTA per SM: two consumer warpgroups (threads 0–255, 64 rows each) and a producer warpgroup
// (threads 256–383) that hands most of its registers to them (setmaxnreg: 40 vs 232 per thread),
// so each consumer keeps two 64×128 accumulator sets and starts the next tile's MMAs before
// reducing this one:
//   issue S(0) into A; step j: issue S(j + 1) into the other set, wait for S(j)
//   (wgmma.wait_group 1), reduce S(j), release stage j
// so a warpgroup's exponentials run while its own tensor-core work for the next tile does. The
// producer's first thread alone moves data: the query block once, then tile t into stage t mod S as soon
// as both consumers released tile t − S (empty[s]: kWgmmaThreads arrivals). With the whole shared
// memory for one CTA the ring is up to kWgmmaMaxStages deep.
//
// Each consumer reads its query rows from the panels once, into wgmma A fragments (kSteps × 4
// registers), and every MMA takes A from registers: per m64n128 k-step the tensor cores then read
// 4 KiB of shared memory (the keys) instead of 6 KiB. (With A from shared memory as well it was
// 4–11% slower in tf32 at n ≥ 50,000: 3.16 vs 3.05 ms, 50.0 vs 48.2 ms; H200, 2026-11-30.)
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

#if defined(FLASHSINKHORN_WGMMA_ENABLED)

// This warpgroup's A fragments of the resident query block, for every 32-byte k-step (the RS
// layout of wgmma.cuh): rows 16w + g and 16w + g + 8 of the warpgroup's 64, words t and t + 4 of
// the k-step, read once from the swizzled panels (landed through the query barrier).
template <int kSteps>
__device__ __forceinline__ void load_query_fragments(std::uint32_t (&a)[kSteps][4], const unsigned char* query) {
  const int warpgroup = threadIdx.x / 128;
  const int warp = (threadIdx.x % 128) / 32;
  const int lane = threadIdx.x % 32;
  const int row0 = warpgroup * 64 + warp * 16 + lane / 4;
#pragma unroll
  for (int s = 0; s < kSteps; ++s) {
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const int row = row0 + (q % 2) * 8;
      const int word = 8 * s + lane % 4 + (q / 2) * 4;
      const int panel = word / wgmma::kPanelWords;
      const int in_panel = word % wgmma::kPanelWords;
      a[s][q] = *reinterpret_cast<const std::uint32_t*>(query + panel * tile::kWgmmaBlockM * wgmma::kPanelRowBytes +
                                                        wgmma::panel_offset(row, in_panel / 4) + (in_panel % 4) * 4);
    }
  }
}

// issue_tile_scores (softmin_wgmma_kernel.cuh) with A from registers.
template <class Op, int kSteps>
__device__ __forceinline__ void issue_tile_scores(float (&acc)[wgmma::kAccumulators],
                                                  const std::uint32_t (&a)[kSteps][4], std::uint32_t key_address) {
  wgmma::pin(acc);
  wgmma::fence();
  const std::uint64_t b0 = wgmma::make_descriptor(key_address);
#pragma unroll
  for (int s = 0; s < kSteps; ++s) {
    const int b = (s / 4) * wgmma::kTileN * wgmma::kPanelRowBytes + (s % 4) * wgmma::kStepBytes;
    Op::mma(acc, a[s], b0 + (b >> 4), s > 0 ? 1 : 0);
  }
  wgmma::commit_group();
  wgmma::pin(acc);
}

#endif  // FLASHSINKHORN_WGMMA_ENABLED

// kPredictedReference (softmin_launch.cu, predicted_reference_for; launched only with previous
// potentials): the consumers fold their keys against the references their rows' previous potentials
// predict (reduce_score_tile_predicted) instead of an online maximum. A CTA in which a row's sum left
// [2⁻⁶⁰, 3·10³⁸] (warpgroup_rows_usable) folds its keys again with the online maximum: the block votes
// after the first pass, and the producer streams the split's tiles a second time through the same
// ring (its barriers' phases continue). kSplitExp2 (predicted tiles only): a quarter of their
// exponentials on the FMA pipe (reduce_score_tile_predicted).
template <class Op, int kSteps, bool kPredictedReference = false, bool kSplitExp2 = false>
__global__ void __launch_bounds__(tile::kWgmmaWsThreads, 1)
    softmin_wgmma_ws_kernel(const softmin_params p, const __grid_constant__ CUtensorMap rows_map,
                            const __grid_constant__ CUtensorMap keys_map) {
#if defined(FLASHSINKHORN_WGMMA_ENABLED)
  extern __shared__ __align__(16) unsigned char shared_raw[];
  __shared__ double error_scratch[tile::kWgmmaWsThreads / 32];
  __shared__ __align__(8) std::uint64_t full[tile::kWgmmaMaxStages];
  __shared__ __align__(8) std::uint64_t empty[tile::kWgmmaMaxStages];
  __shared__ __align__(8) std::uint64_t query_full;
  unsigned char* shared = panel_aligned(shared_raw);

  const std::int64_t row_words64 = p.padded_dim * static_cast<std::int64_t>(sizeof(typename Op::storage)) / 4;
  const wgmma_geometry geo = make_wgmma_geometry(row_words64, p.max_shared_bytes, 1);
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
  auto stage_at = [&](const tma::ring_position& at) { return ring + at.stage * geo.stage_bytes; };
  auto bias_at = [&](const tma::ring_position& at) { return bias_ring + at.stage * wgmma::kTileN; };

  if (threadIdx.x == 0) tma::init_ring_barriers(full, empty, stages, tile::kWgmmaThreads, &query_full);
  __syncthreads();

  const bool producer = threadIdx.x >= tile::kWgmmaThreads;
  // The producer's first thread: every key tile of the split into the ring; `loaded` counts the
  // tiles it has issued over both passes (a stage's earlier use must be released first).
  tma::ring_position at;
  int loaded = 0;
  auto stream_keys = [&] {
    if (threadIdx.x == tile::kWgmmaThreads) {
      for (int t = 0; t < tiles; ++t, ++loaded, at.advance(stages)) {
        // The stage last held the tile loaded S earlier: wait for that use's release (the previous parity).
        if (loaded >= stages) tma::wait_or_trap(&empty[at.stage], at.parity ^ 1);
        load_key_tile<kPanels>(stage_at(at), bias_at(at), &keys_map, key_bias, (tile_begin + t) * wgmma::kTileN,
                               &full[at.stage]);
      }
    }
    __syncwarp();
  };
  // A consumer's rows: (max, Σ) online, or (reference, Σ) with predicted references.
  float row_max[2] = {-INFINITY, -INFINITY};  // rows g and g + 8 of this warp's 16
  float row_sum[2] = {0.f, 0.f};
  tma::ring_position ahead, behind;  // the next tile to issue, the next to reduce
  // Every tile of the split through `reduce_tile(acc, β)`: step j issues tile j + 1's MMAs into the
  // other accumulator set, waits for tile j's (wgmma.wait_group 1), reduces it and releases its stage.
  // The two sets alternate by unrolling by two; no branch surrounds a wgmma (ptxas would serialise
  // the pipeline, C7514), so the last tiles are peeled. Called only where the consumers' registers
  // have been claimed (outside that region ptxas has the kernel's 168 and spills, C7512).
  auto fold_keys = [&](auto reduce_tile) {
    float acc0[wgmma::kAccumulators];  // (64 rows, 128 keys) of this warpgroup, layout of wgmma.cuh
    float acc1[wgmma::kAccumulators];
    std::uint32_t query_fragments[kSteps][4];
    auto issue = [&](float (&acc)[wgmma::kAccumulators]) {
      tma::wait(&full[ahead.stage], ahead.parity);
      issue_tile_scores<Op, kSteps>(acc, query_fragments, smem_address(stage_at(ahead)));
      ahead.advance(stages);
    };
    auto reduce = [&](float (&acc)[wgmma::kAccumulators]) {
      wgmma::pin(acc);
      reduce_tile(acc, bias_at(behind));
      tma::arrive(&empty[behind.stage]);
      behind.advance(stages);
    };
    auto step = [&](float (&current)[wgmma::kAccumulators], float (&next)[wgmma::kAccumulators]) {
      issue(next);             // tile j + 1
      wgmma::wait_group<1>();  // tile j's MMAs are done
      reduce(current);         // tile j
    };
    auto last = [&](float (&current)[wgmma::kAccumulators]) {
      wgmma::wait_group<0>();
      reduce(current);
    };
    tma::wait(&query_full, 0);
    load_query_fragments<kSteps>(query_fragments, query);
    if (tiles > 0) {
      issue(acc0);
      int j = 0;
      for (; j + 2 < tiles; j += 2) {
        step(acc0, acc1);
        step(acc1, acc0);
      }
      if (j + 1 < tiles) {  // two tiles left
        step(acc0, acc1);
        last(acc1);
      } else {
        last(acc0);
      }
    }
  };
  auto fold_online = [&] {
    fold_keys([&](const float (&acc)[wgmma::kAccumulators], const float* bias) {
      reduce_score_tile(acc, bias, p.score_scale_log2, row_max, row_sum);
    });
  };

  // A predicting CTA votes after its first pass (`tiles` is the same for the whole block, so every
  // thread votes or none does); the producer and the consumers vote from their own branches, each
  // warp arriving once at the block's barrier.
  double error = 0;  // this thread's share of the block's marginal-error term (the producer's: 0)
  if (producer) {
    wgmma::release_registers<tile::kWgmmaWsProducerRegisters>();
    if (threadIdx.x == tile::kWgmmaThreads) load_query_block<kPanels>(query, &rows_map, row_block0, &query_full);
    stream_keys();
    if (kPredictedReference && tiles > 0 && __syncthreads_or(0) != 0) stream_keys();  // the fallback's pass
  } else {
    wgmma::claim_registers<tile::kWgmmaWsConsumerRegisters>();
    if (kPredictedReference && tiles > 0) {
      row_max[0] = predicted_row_reference(p, warpgroup_row(row_block0, 0));  // the references (log₂ units)
      row_max[1] = predicted_row_reference(p, warpgroup_row(row_block0, 1));
      const float offset[2] = {kSplitExp2 ? math::exp2_cubic_offset(row_max[0]) : 0.f,
                               kSplitExp2 ? math::exp2_cubic_offset(row_max[1]) : 0.f};
      fold_keys([&](const float (&acc)[wgmma::kAccumulators], const float* bias) {
        reduce_score_tile_predicted<kSplitExp2>(acc, bias, p.score_scale_log2, row_max, offset, row_sum);
      });
      const bool usable = warpgroup_rows_usable(p, row_block0, row_sum);
      if (__syncthreads_or(usable ? 0 : 1) != 0) {  // the fallback: every row of the CTA online
        row_max[0] = row_max[1] = -INFINITY;
        row_sum[0] = row_sum[1] = 0.f;
        fold_online();
      }
    } else {
      fold_online();
    }
    error = leave_warpgroup_rows(p, row_block0, split, row_max, row_sum);
  }
  // Every thread, the producer warpgroup included (its share is 0): the block-wide sum, and with
  // split keys the merge of the row block's splits by its last CTA.
  finish_block<float>(p, error, error_scratch, row_block0, tile::kWgmmaBlockM);
#elif defined(__CUDA_ARCH__)
  __trap();  // the launcher selects this kernel only on sm_90a builds running on sm_90
#endif
}

}  // namespace flashsinkhorn::detail::kernels
