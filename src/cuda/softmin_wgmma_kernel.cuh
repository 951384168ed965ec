// The Hopper (sm_90a) softmin kernel: the same half-step as softmin_mma_kernel (softmin_kernel.cuh),
// with the scores computed by warpgroup MMAs (wgmma) straight from shared memory.
//
// One CTA = kWgmmaWarpgroups warpgroups × 64 rows of the `rows` cloud, resident in shared memory
// for the whole key range of its split. Per key tile (128 keys, whole rows of ≤ kWgmmaMaxRowWords
// words), with S ring stages of 128-byte-swizzled key panels (wgmma.cuh) and β in a ring beside:
//   step j:  wait for tile j, barrier (the stage of tile j − 1 is free), prefetch tile j + S − 1,
//            S_j = Q·K_jᵀ (row_words/8 wgmma k-steps), wait,
//            t = S_j·(2s/ε)log2 e + β log2 e, online (max, Σ 2^(t − max)) per row.
// Two CTAs per SM overlap one another's MMAs and exponentials. Rows finish as in the mma.sync
// kernel (leave_row).
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "cuda/key_splits.hpp"
#include "cuda/softmin_kernel.cuh"
#include "cuda/tile_config.hpp"
#include "cuda/wgmma.cuh"
#include "math/exp2_cubic.hpp"
#include "math/lse_state.hpp"

namespace flashsinkhorn::detail::kernels {

// Shared-memory plan of the wgmma kernel (host and device), in bytes unless named otherwise.
// Stage: keys (panels, kTileN, 128 B) · β (kTileN floats), rounded up to a panel boundary.
struct wgmma_geometry {
  int row_words = 0;    // 32-bit words per row (tf32: d padded; bf16: d/2 padded), multiple of 8
  int steps = 0;        // 32-byte k-steps per row = row_words / 8
  int panels = 0;       // 32-word swizzle panels per row
  int query_bytes = 0;  // (panels, kWgmmaBlockM, 128 B)
  int key_bytes = 0;    // (panels, kTileN, 128 B)
  int stage_bytes = 0;  // = key_bytes
  int bias_bytes = 0;   // β ring: one slot of kTileN floats per stage
  int stages = 0;
  int total_bytes = 0;  // including the slack that aligns the base to 1024 B
  bool fits = false;
};

__host__ __device__ inline wgmma_geometry make_wgmma_geometry(std::int64_t row_words, int max_shared_bytes,
                                                              int ctas_per_sm = tile::kWgmmaCtasPerSm) {
  wgmma_geometry g;
  g.row_words = static_cast<int>(row_words);
  g.steps = g.row_words * 4 / wgmma::kStepBytes;
  g.panels = (g.row_words + wgmma::kPanelWords - 1) / wgmma::kPanelWords;
  g.query_bytes = g.panels * tile::kWgmmaBlockM * wgmma::kPanelRowBytes;
  g.key_bytes = g.panels * wgmma::kTileN * wgmma::kPanelRowBytes;
  g.stage_bytes = g.key_bytes;
  const bool shape_ok = row_words > 0 && row_words % 8 == 0 && row_words <= tile::kWgmmaMaxRowWords;
  // With two CTAs per SM each gets half of the SM's shared memory (less the 1 KiB per CTA that
  // the hardware reserves; the opt-in per-block limit is the SM's capacity less that 1 KiB).
  const int budget = ctas_per_sm == 1 ? max_shared_bytes : (max_shared_bytes + 1024) / ctas_per_sm - 1024;
  for (int stages = tile::kWgmmaMaxStages; stages >= tile::kWgmmaMinStages; --stages) {
    g.stages = stages;
    g.bias_bytes = stages * wgmma::kTileN * 4;
    g.total_bytes = wgmma::kPanelAlignment + g.query_bytes + stages * g.stage_bytes + g.bias_bytes;
    g.fits = shape_ok && g.total_bytes <= budget;
    if (g.fits) break;
  }
  return g;
}

// The clusters of a key-pairs launch of the streamed kernel (key_splits.hpp, key_pair_layout): what
// the launcher sizes its grid by and each CTA reads its cell from (pair_cta_work_of).
__host__ __device__ inline key_pair_layout key_pair_layout_of(const softmin_params& p) {
  const std::int64_t row_blocks = (p.rows + tile::kWgmmaBlockM - 1) / tile::kWgmmaBlockM;
  return make_key_pair_layout(row_blocks, p.splits, last_split_short(p.key_tiles, p.splits, p.tiles_per_split),
                              p.query_pairs != 0);
}

// Operand policies: storage type (tf32 values as float, or bf16) and the m64n128 MMA of one 32-byte
// k-step, A from shared memory (a descriptor) or from registers.
template <class Storage>
struct wgmma_operands {
  using storage = Storage;
#if defined(FLASHSINKHORN_WGMMA_ENABLED)
  // A from registers (wgmma.cuh's RS form).
  __device__ __forceinline__ static void mma(float (&d)[wgmma::kAccumulators], const std::uint32_t (&a)[4],
                                             std::uint64_t b, int accumulate) {
    if constexpr (std::is_same_v<Storage, float>)
      wgmma::mma_tf32(d, a, b, accumulate);
    else
      wgmma::mma_bf16(d, a, b, accumulate);
  }
  __device__ __forceinline__ static void mma(float (&d)[wgmma::kAccumulators], std::uint64_t a, std::uint64_t b,
                                             int accumulate) {
    if constexpr (std::is_same_v<Storage, float>)
      wgmma::mma_tf32(d, a, b, accumulate);
    else
      wgmma::mma_bf16(d, a, b, accumulate);
  }
#endif
};
using wgmma_tf32_operands = wgmma_operands<float>;
using wgmma_bf16_operands = wgmma_operands<__nv_bfloat16>;

#if defined(FLASHSINKHORN_WGMMA_ENABLED)

// cp.async.wait_group with a run-time count (the ring depth depends on d).
__device__ __forceinline__ void cp_async_wait_pending(int pending) {
  if (pending <= 0)
    cp_async_wait<0>();
  else if (pending == 1)
    cp_async_wait<1>();
  else
    cp_async_wait<2>();
}

// Copies kWidthWords words of `rows` rows (global, row-major with a stride of `stride_words`) into
// swizzled panels of kPanelRows rows at `dst` (rows ≤ kPanelRows; the rest of each panel is left as
// it is). The shapes are compile-time, so the piece → (row, chunk) split is shifts and the loop is
// unrolled.
template <int kWidthWords, int kPanelRows, int kUnroll = 4>
__device__ __forceinline__ void copy_rows_to_panels(unsigned char* dst, const std::uint32_t* src,
                                                    std::int64_t stride_words, int rows) {
  constexpr int kChunksPerRow = kWidthWords / 4;  // 16-byte pieces
  constexpr int kPanelBytes = kPanelRows * wgmma::kPanelRowBytes;
  constexpr int kPieces = kPanelRows * kChunksPerRow;
  // A compile-time stride (all kWgmmaThreads threads copy) keeps each thread's chunk column fixed.
#pragma unroll kUnroll
  for (int idx = threadIdx.x; idx < kPieces; idx += tile::kWgmmaThreads) {
    const int r = idx / kChunksPerRow;
    const int c = idx % kChunksPerRow;
    if (r < rows)
      cp_async_16(dst + (c / 8) * kPanelBytes + wgmma::panel_offset(r, c % 8), src + r * stride_words + c * 4);
  }
}

// This thread's β of a tile: the 32 columns 8g + 2·(lane mod 4) + {0, 1} (n8 groups g < 16) of
// `bias` (the tile's 128 values), one 8-byte load per group, from shared or global memory.
inline constexpr int kTileBiasPairs = wgmma::kTileN / 8;
__device__ __forceinline__ void load_tile_bias(float2 (&beta)[kTileBiasPairs], const float* bias) {
  const float2* bias_lane = reinterpret_cast<const float2*>(bias + 2 * (threadIdx.x % 4));
#pragma unroll
  for (int g = 0; g < kTileBiasPairs; ++g) beta[g] = bias_lane[4 * g];
}

// Row h (0: g, 1: g + 8) of this thread's share of a 64×128 score tile held in `acc`: its 32
// scores t = acc·scale + β (log₂ units; score k is n8 group k/2, column 2·(lane mod 4) + k mod 2)
// into `t`, and their maximum, as four independent chains (short dependency chains; constant
// bounds only, so that nothing is indexed at run time and the arrays stay in registers).
inline constexpr int kRowScores = wgmma::kTileN / 4;
__device__ __forceinline__ float tile_row_scores(const float (&acc)[wgmma::kAccumulators],
                                                 const float2 (&beta)[kTileBiasPairs], float scale, int h,
                                                 float (&t)[kRowScores]) {
#pragma unroll
  for (int k = 0; k < kRowScores; ++k)
    t[k] = fmaf(acc[4 * (k / 2) + 2 * h + k % 2], scale, k % 2 == 0 ? beta[k / 2].x : beta[k / 2].y);
  float chain[4] = {t[0], t[1], t[2], t[3]};
#pragma unroll
  for (int k = 4; k < kRowScores; ++k) chain[k % 4] = fmaxf(chain[k % 4], t[k]);
  return fmaxf(fmaxf(chain[0], chain[1]), fmaxf(chain[2], chain[3]));
}

// Online LSE of one 64×128 score tile held in `acc` (this thread: rows g and g + 8 of its warp's
// 16, 32 columns each), t = acc·scale + β (log2 units), with this thread's β in registers
// (load_tile_bias); the four threads of a row share one running maximum (advance_row_max). `acc`
// is only read: an accumulator register written by ordinary instructions would make ptxas
// serialise the next tile's wgmma behind this one (C7515).
__device__ __forceinline__ void reduce_score_tile(const float (&acc)[wgmma::kAccumulators],
                                                  const float2 (&beta)[kTileBiasPairs], float scale,
                                                  float (&row_max)[2], float (&row_sum)[2]) {
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    float t[kRowScores];
    const row_max_step step = advance_row_max(row_max[h], tile_row_scores(acc, beta, scale, h, t));
    float sums[4] = {row_sum[h] * step.rescale, 0.f, 0.f, 0.f};
#pragma unroll
    for (int k = 0; k < kRowScores; ++k) sums[k % 4] += fast_exp2(t[k] - step.reference);
    row_sum[h] = (sums[0] + sums[1]) + (sums[2] + sums[3]);
  }
}

// The same with the tile's 128 β values in memory (`bias`).
__device__ __forceinline__ void reduce_score_tile(const float (&acc)[wgmma::kAccumulators], const float* bias,
                                                  float scale, float (&row_max)[2], float (&row_sum)[2]) {
  float2 beta[kTileBiasPairs];
  load_tile_bias(beta, bias);
  reduce_score_tile(acc, beta, scale, row_max, row_sum);
}

// The same tile against fixed row references (log₂ units; predicted from the rows' previous
// potentials, predicted_row_reference): no maximum, shuffles or rescale, so each score is an FFMA,
// an FADD, the ex2 and an FADD into the sum, and the exponentials interleave with the next scores'
// arithmetic instead of waiting for the tile's maximum. row_sum[h] = Σ 2^(t − reference[h]).
// kSplitExp2 (kernel_variant.hpp, FLASHSINKHORN_EXP2=split): every fourth score's 2^(t − reference)
// by the cubic of math/exp2_cubic.hpp on the FMA pipe (`offset`: the rows' exp2_cubic_offset), the
// others' on the MUFU, which then no longer bounds the tile alone.
template <bool kSplitExp2 = false>
__device__ __forceinline__ void reduce_score_tile_predicted(const float (&acc)[wgmma::kAccumulators],
                                                            const float* bias, float scale,
                                                            const float (&reference)[2], const float (&offset)[2],
                                                            float (&row_sum)[2]) {
  float2 beta[kTileBiasPairs];
  load_tile_bias(beta, bias);
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    float sums[4] = {row_sum[h], 0.f, 0.f, 0.f};
#pragma unroll
    for (int k = 0; k < kRowScores; ++k) {
      const float t = fmaf(acc[4 * (k / 2) + 2 * h + k % 2], scale, k % 2 == 0 ? beta[k / 2].x : beta[k / 2].y);
      sums[k % 4] += kSplitExp2 && k % 4 == 3 ? math::exp2_cubic(t, offset[h]) : fast_exp2(t - reference[h]);
    }
    row_sum[h] = (sums[0] + sums[1]) + (sums[2] + sums[3]);
  }
}

// Row `row`'s predicted reference (predicted_reference_log2) as the tile reductions take it; padding
// rows get 0 (their sums are never judged).
__device__ __forceinline__ float predicted_row_reference(const softmin_params& p, std::int64_t row) {
  return row < p.rows ? static_cast<float>(predicted_reference_log2(p, row)) : 0.f;
}

// This thread's row h (0: g, 1: g + 8 of its warp's 16 in its warpgroup's 64) of the block at row_block0.
__device__ __forceinline__ std::int64_t warpgroup_row(std::int64_t row_block0, int h) {
  return row_block0 + (threadIdx.x / 128) * 64 + ((threadIdx.x % 128) / 32) * 16 + h * 8 + (threadIdx.x % 32) / 4;
}

// A row's sum from the partial sums of the four lanes of its quad (every lane of the warp calls it).
__device__ __forceinline__ float quad_sum(float partial) {
  partial += __shfl_xor_sync(0xffffffffu, partial, 1);
  return partial + __shfl_xor_sync(0xffffffffu, partial, 2);
}

// Whether this thread's two rows kept usable sums over the split (predicted_sum_usable, after the
// quad's reduction). All lanes of the warp call it.
__device__ __forceinline__ bool warpgroup_rows_usable(const softmin_params& p, std::int64_t row_block0,
                                                      const float (&row_sum)[2]) {
  bool usable = true;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const float sum = quad_sum(row_sum[h]);
    if (warpgroup_row(row_block0, h) < p.rows && !predicted_sum_usable(sum)) usable = false;
  }
  return usable;
}

// acc = Q_wg · K_tᵀ for a resident query block (panels of kWgmmaBlockM rows; this warpgroup's 64
// start at `query_address`) and a key stage (panels of kTileN rows at `key_address`): kSteps
// 32-byte k-steps, issued asynchronously and committed as one group (returns before the tensor
// cores finish; wgmma::wait_group retires it).
template <class Op, int kSteps>
__device__ __forceinline__ void issue_tile_scores(float (&acc)[wgmma::kAccumulators], std::uint32_t query_address,
                                                  std::uint32_t key_address) {
  wgmma::pin(acc);
  wgmma::fence();
  // Descriptors of the first k-step; a later step adds its byte offset / 16 to the start field
  // (shared addresses stay below 2^18, so the 14-bit field never carries).
  const std::uint64_t a0 = wgmma::make_descriptor(query_address);
  const std::uint64_t b0 = wgmma::make_descriptor(key_address);
#pragma unroll
  for (int s = 0; s < kSteps; ++s) {
    const int step_offset = (s % 4) * wgmma::kStepBytes;
    const int a = (s / 4) * tile::kWgmmaBlockM * wgmma::kPanelRowBytes + step_offset;
    const int b = (s / 4) * wgmma::kTileN * wgmma::kPanelRowBytes + step_offset;
    Op::mma(acc, a0 + (a >> 4), b0 + (b >> 4), s > 0 ? 1 : 0);
  }
  wgmma::commit_group();
  wgmma::pin(acc);
}

// The work of a CTA of the wgmma kernels: its block of kWgmmaBlockM rows and the key tiles of its
// split; a split past the end has no tiles. The (row blocks, splits) grid is read with the split
// fastest (part_fastest_cell): the resident CTAs hold the splits of fewer row blocks, so the
// streamed kernel's query panels, read again for every key tile, come from L2 (key_splits.hpp,
// streamed_query_splits). One split: CTA x holds row block x.
struct cta_work {
  std::int64_t row_block0;  // first row of the block
  int split;
  int tile_begin;  // first key tile of the split
  int tiles;       // key tiles of the split
};

// Row block `row_block` against the key tiles of split `split`.
__device__ __forceinline__ cta_work cta_work_at(const softmin_params& p, std::int64_t row_block, int split) {
  const int tile_begin = split * p.tiles_per_split;
  return {row_block * tile::kWgmmaBlockM, split, tile_begin,
          max(0, min(p.key_tiles, tile_begin + p.tiles_per_split) - tile_begin)};
}

__device__ __forceinline__ cta_work cta_work_of(const softmin_params& p) {
  const grid_cell cell = part_fastest_cell(blockIdx.x + static_cast<std::int64_t>(blockIdx.y) * gridDim.x, p.splits);
  return cta_work_at(p, cell.row_block, cell.part);
}

// The work of a CTA of the streamed kernel's key pairs (clusters of two CTAs,
// FLASHSINKHORN_STREAMED_KEY_PAIRS; softmin_wgmma_ws_streamed_kernel.cuh): cluster blockIdx.x / 2's
// cell of rank `rank` in key_pair_layout's order (key_splits.hpp, key_pair_cell_of). A key pair's
// CTAs hold two row blocks of one split and share its key panels, a query pair's two splits of the
// last row block and share its query panels; a ghost repeats its partner's work (the multicast needs
// both CTAs to load and consume every stage) and writes nothing. A 1-D grid of 2 · clusters() CTAs.
struct pair_cta_work {
  cta_work work;
  bool shares_queries;  // a query pair: the cluster shares the query panels, each CTA its own keys
  bool ghost;
};

__device__ __forceinline__ pair_cta_work pair_cta_work_of(const softmin_params& p, unsigned rank) {
  const std::int64_t row_blocks = (p.rows + tile::kWgmmaBlockM - 1) / tile::kWgmmaBlockM;
  const key_pair_cell cell = key_pair_cell_of(key_pair_layout_of(p), row_blocks, p.splits, blockIdx.x / 2, rank);
  return {cta_work_at(p, cell.row_block, cell.split), cell.shares_queries, cell.ghost};
}

// Row i's state (max, Σ) of this thread (rows g and g + 8 of its warp's 16 in its warpgroup's 64)
// is reduced over the quad, then the row is finished (one split) or its partial state is written.
// Returns this thread's share of the block's marginal-error term.
__device__ __forceinline__ double leave_warpgroup_rows(const softmin_params& p, std::int64_t row_block0, int split,
                                                       const float (&row_max)[2], const float (&row_sum)[2]) {
  double error = 0;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const float sum = quad_sum(row_sum[h]);
    const std::int64_t row = warpgroup_row(row_block0, h);
    if (threadIdx.x % 4 == 0 && row < p.rows) error += leave_row(p, row, split, {row_max[h] * kLn2f, sum});
  }
  return error;
}

// Leaves the kernel: leave_warpgroup_rows, then finish_block (the error term; split rows merged).
__device__ __forceinline__ void finish_warpgroup_rows(const softmin_params& p, std::int64_t row_block0, int split,
                                                      const float (&row_max)[2], const float (&row_sum)[2],
                                                      double* error_scratch) {
  const double error = leave_warpgroup_rows(p, row_block0, split, row_max, row_sum);
  finish_block<float>(p, error, error_scratch, row_block0, tile::kWgmmaBlockM);
}

// Shared memory of a kernel, aligned up to a panel boundary (the launchers add that much slack).
__device__ __forceinline__ unsigned char* panel_aligned(unsigned char* shared_raw) {
  return shared_raw +
         ((wgmma::kPanelAlignment - (smem_address(shared_raw) % wgmma::kPanelAlignment)) % wgmma::kPanelAlignment);
}

#endif  // FLASHSINKHORN_WGMMA_ENABLED

// kSteps = row_words / 8 (32-byte k-steps per row) is a template argument so that the k-loop of
// wgmma instructions is fully unrolled (a run-time loop makes ptxas fence every iteration).
template <class Op, int kSteps>
__global__ void __launch_bounds__(tile::kWgmmaThreads, tile::kWgmmaCtasPerSm) softmin_wgmma_kernel(const softmin_params p) {
#if defined(FLASHSINKHORN_WGMMA_ENABLED)
  extern __shared__ __align__(16) unsigned char shared_raw[];
  __shared__ double error_scratch[tile::kWgmmaThreads / 32];
  unsigned char* shared = panel_aligned(shared_raw);

  const std::int64_t row_words64 = p.padded_dim * static_cast<std::int64_t>(sizeof(typename Op::storage)) / 4;
  const wgmma_geometry geo = make_wgmma_geometry(row_words64, p.max_shared_bytes);
  constexpr int kRowWords = kSteps * wgmma::kStepBytes / 4;  // == geo.row_words (the launcher's choice)
  const int stages = geo.stages;
  const cta_work work = cta_work_of(p);  // (not a structured binding: the lambdas below capture these)
  const std::int64_t row_block0 = work.row_block0;
  const int split = work.split, tile_begin = work.tile_begin, tiles = work.tiles;

  const auto* rows_points = static_cast<const std::uint32_t*>(p.rows_points);
  const auto* key_points = static_cast<const std::uint32_t*>(p.key_points);
  const float* key_bias = static_cast<const float*>(p.key_bias);

  unsigned char* query = shared;                  // (panels, kWgmmaBlockM, 128 B)
  unsigned char* ring = shared + geo.query_bytes;  // stages × keys (panels, kTileN, 128 B)
  auto stage_of = [&](int t) { return ring + (t % stages) * geo.stage_bytes; };
  // β of the tiles in flight, apart from the keys so that every stage is whole panels.
  float* bias_ring = reinterpret_cast<float*>(ring + stages * geo.stage_bytes);  // (stages, kTileN)
  auto bias_of = [&](int t) { return bias_ring + (t % stages) * wgmma::kTileN; };

  auto issue_tile = [&](int t) {
    if (t < tiles) {
      const std::int64_t key0 = static_cast<std::int64_t>(tile_begin + t) * wgmma::kTileN;
      unsigned char* stage = stage_of(t);
      copy_rows_to_panels<kRowWords, wgmma::kTileN>(stage, key_points + key0 * kRowWords, kRowWords, wgmma::kTileN);
      if (threadIdx.x < wgmma::kTileN / 4)
        cp_async_16(bias_of(t) + threadIdx.x * 4, key_bias + key0 + threadIdx.x * 4);
    }
    cp_async_commit();
  };

  // The last row block may reach past the padded rows (kWgmmaBlockM need not divide kRowPadding):
  // those rows are not loaded, and their results are never written.
  const int block_rows = static_cast<int>(min64(tile::kWgmmaBlockM, p.rows_padded - row_block0));
  copy_rows_to_panels<kRowWords, tile::kWgmmaBlockM>(query, rows_points + row_block0 * kRowWords, kRowWords,
                                                     block_rows);
  for (int t = 0; t < stages - 1; ++t) issue_tile(t);  // the query joins the first group

  const int warpgroup = threadIdx.x / 128;
  const std::uint32_t query_address =
      smem_address(query) + warpgroup * 64 * wgmma::kPanelRowBytes;  // this warpgroup's 64 rows

  // acc = Q_wg · K_tᵀ, issued asynchronously.
  auto issue_scores = [&](float (&acc)[wgmma::kAccumulators], int t) {
    issue_tile_scores<Op, kSteps>(acc, query_address, smem_address(stage_of(t)));
  };

  float row_max[2] = {-INFINITY, -INFINITY};  // rows g and g + 8 of this warp's 16
  float row_sum[2] = {0.f, 0.f};
  auto reduce = [&](const float (&acc)[wgmma::kAccumulators], int j) {
    reduce_score_tile(acc, bias_of(j), p.score_scale_log2, row_max, row_sum);
  };
  // Tile j has landed in every thread's view, and the stage of tile j − 1 is free (its MMAs
  // completed before each warpgroup reached this barrier).
  auto tile_ready = [&](int j) {
    cp_async_wait_pending(stages - 2);
    wgmma::fence_proxy_async();
    __syncthreads();
    issue_tile(j + stages - 1);
  };

  // One accumulator set; the other CTA on the SM keeps the tensor cores busy meanwhile.
  float acc[wgmma::kAccumulators];  // (64 rows, 128 keys) of this warpgroup, layout of wgmma.cuh
  for (int j = 0; j < tiles; ++j) {
    tile_ready(j);
    issue_scores(acc, j);
    wgmma::wait_group<0>();
    wgmma::pin(acc);
    reduce(acc, j);
  }
  cp_async_wait<0>();

  finish_warpgroup_rows(p, row_block0, split, row_max, row_sum, error_scratch);
#elif defined(__CUDA_ARCH__)
  __trap();  // the launcher selects this kernel only on sm_90a builds running on sm_90
#endif
}

}  // namespace flashsinkhorn::detail::kernels
