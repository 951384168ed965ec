// The Hopper softmin kernel for wide rows (more than kWgmmaMaxRowWords words: tf32 d > 64,
// bf16 d > 128): the query block no longer fits next to the key ring, so both stream through it
// one 32-word panel at a time and the scores accumulate over the panels in the wgmma registers.
//
// One CTA = kWgmmaWarpgroups × 64 rows, two CTAs per SM. Loads are (key tile t, panel c) pairs in
// order; stage = keys (kTileN, 128 B) · queries (kWgmmaBlockM, 128 B) · β of tile t (kTileN floats).
//   load l:  wait for it, barrier (the stage of l − 1 is free), prefetch load l + S − 1,
//            acc (+)= Q_c · K_{t,c}ᵀ (4 wgmma k-steps; zero-initialised at c = 0), wait;
//            after the last panel of tile t: online (max, Σ 2^(t − max)) per row (reduce_score_tile).
// Every key panel is read once per row block and every query panel once per key tile, from L2.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/softmin_kernel.cuh"
#include "cuda/softmin_wgmma_kernel.cuh"
#include "cuda/tile_config.hpp"
#include "cuda/wgmma.cuh"

namespace flashsinkhorn::detail::kernels {

// Shared-memory plan of the streamed kernel (host and device), bytes.
struct wgmma_streamed_geometry {
  int panels = 0;       // 32-word panels per row
  int key_bytes = 0;    // (kTileN, 128 B)
  int query_bytes = 0;  // (kWgmmaBlockM, 128 B)
  int stage_bytes = 0;  // keys · queries · β, rounded up to a panel boundary
  int stages = 0;
  int total_bytes = 0;  // including the 1024-byte alignment slack
  bool fits = false;
};

__host__ __device__ inline wgmma_streamed_geometry make_wgmma_streamed_geometry(std::int64_t row_words,
                                                                                int max_shared_bytes) {
  wgmma_streamed_geometry g;
  g.panels = static_cast<int>(row_words / wgmma::kPanelWords);
  g.key_bytes = wgmma::kTileN * wgmma::kPanelRowBytes;
  g.query_bytes = tile::kWgmmaBlockM * wgmma::kPanelRowBytes;
  g.stage_bytes = (g.key_bytes + g.query_bytes + wgmma::kTileN * 4 + wgmma::kPanelAlignment - 1) /
                  wgmma::kPanelAlignment * wgmma::kPanelAlignment;
  const bool shape_ok = row_words > 0 && row_words % wgmma::kPanelWords == 0;
  const int budget = (max_shared_bytes + 1024) / tile::kWgmmaStreamedCtasPerSm - 1024;
  for (int stages = tile::kWgmmaMaxStages; stages >= 2; --stages) {
    g.stages = stages;
    g.total_bytes = wgmma::kPanelAlignment + stages * g.stage_bytes;
    g.fits = shape_ok && g.total_bytes <= budget;
    if (g.fits) break;
  }
  return g;
}

template <class Op>
__global__ void __launch_bounds__(tile::kWgmmaThreads, tile::kWgmmaStreamedCtasPerSm)
    softmin_wgmma_streamed_kernel(const softmin_params p) {
#if defined(FLASHSINKHORN_WGMMA_ENABLED)
  extern __shared__ __align__(16) unsigned char shared_raw[];
  __shared__ double error_scratch[tile::kWgmmaThreads / 32];
  unsigned char* ring = panel_aligned(shared_raw);

  const std::int64_t row_words = p.padded_dim * static_cast<std::int64_t>(sizeof(typename Op::storage)) / 4;
  const wgmma_streamed_geometry geo = make_wgmma_streamed_geometry(row_words, p.max_shared_bytes);
  const int panels = geo.panels;
  const int stages = geo.stages;
  const cta_work work = cta_work_of(p);  // (not a structured binding: the lambdas below capture these)
  const std::int64_t row_block0 = work.row_block0;
  const int split = work.split, tile_begin = work.tile_begin, tiles = work.tiles;
  const int loads = tiles * panels;
  const int block_rows = static_cast<int>(min64(tile::kWgmmaBlockM, p.rows_padded - row_block0));

  const auto* rows_points = static_cast<const std::uint32_t*>(p.rows_points);
  const auto* key_points = static_cast<const std::uint32_t*>(p.key_points);
  const float* key_bias = static_cast<const float*>(p.key_bias);
  auto stage_of = [&](int l) { return ring + (l % stages) * geo.stage_bytes; };

  auto issue_load = [&](int l) {
    if (l < loads) {
      const int t = l / panels;
      const int c = l - t * panels;
      const std::int64_t key0 = static_cast<std::int64_t>(tile_begin + t) * wgmma::kTileN;
      unsigned char* stage = stage_of(l);
      copy_rows_to_panels<wgmma::kPanelWords, wgmma::kTileN, 1>(
          stage, key_points + key0 * row_words + c * wgmma::kPanelWords, row_words, wgmma::kTileN);
      copy_rows_to_panels<wgmma::kPanelWords, tile::kWgmmaBlockM, 1>(
          stage + geo.key_bytes, rows_points + row_block0 * row_words + c * wgmma::kPanelWords, row_words,
          block_rows);
      if (c == panels - 1 && threadIdx.x < wgmma::kTileN / 4)
        cp_async_16(stage + geo.key_bytes + geo.query_bytes + threadIdx.x * 16, key_bias + key0 + threadIdx.x * 4);
    }
    cp_async_commit();
  };
  for (int l = 0; l < stages - 1; ++l) issue_load(l);

  const int warpgroup = threadIdx.x / 128;
  float row_max[2] = {-INFINITY, -INFINITY};  // rows g and g + 8 of this warp's 16
  float row_sum[2] = {0.f, 0.f};
  float acc[wgmma::kAccumulators];  // (64 rows, 128 keys) of this warpgroup, layout of wgmma.cuh
  for (int l = 0; l < loads; ++l) {
    cp_async_wait_pending(stages - 2);
    wgmma::fence_proxy_async();
    __syncthreads();  // load l landed for everyone; the stage of load l − 1 is free
    issue_load(l + stages - 1);

    const int c = l % panels;
    const std::uint32_t key_address = smem_address(stage_of(l));
    const std::uint32_t query_address = key_address + geo.key_bytes + warpgroup * 64 * wgmma::kPanelRowBytes;
    wgmma::pin(acc);
    wgmma::fence();
#pragma unroll
    for (int s = 0; s < wgmma::kPanelRowBytes / wgmma::kStepBytes; ++s) {
      const std::uint32_t step_offset = s * wgmma::kStepBytes;
      Op::mma(acc, wgmma::make_descriptor(query_address + step_offset),
              wgmma::make_descriptor(key_address + step_offset), (c > 0 || s > 0) ? 1 : 0);
    }
    wgmma::commit_group();
    wgmma::wait_group<0>();
    wgmma::pin(acc);
    if (c == panels - 1) {
      const float* bias = reinterpret_cast<const float*>(stage_of(l) + geo.key_bytes + geo.query_bytes);
      reduce_score_tile(acc, bias, p.score_scale_log2, row_max, row_sum);
    }
  }
  cp_async_wait<0>();
  finish_warpgroup_rows(p, row_block0, split, row_max, row_sum, error_scratch);
#elif defined(__CUDA_ARCH__)
  __trap();  // the launcher selects this kernel only on sm_90a builds running on sm_90
#endif
}

}  // namespace flashsinkhorn::detail::kernels
