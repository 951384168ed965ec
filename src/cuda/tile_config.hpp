// Tile shapes of the CUDA kernels: data, one reason per entry (STYLE.md). Shared by the kernels
// (compile-time shapes) and the host launchers (shared-memory sizes, grid shapes, padding).
#pragma once

#include <cstdint>

// Tuning overrides, for the kernel-lab script tools/tune_variants.sh only (the defaults below are
// the measured choice): FLASHSINKHORN_TUNE_{ROWS_PER_WARP, BLOCK_N, STAGES, K_UNROLL,
// WGMMA_WARPGROUPS}. Which Hopper kernel runs is kernel_variant.hpp's choice.
#ifndef FLASHSINKHORN_TUNE_ROWS_PER_WARP
#define FLASHSINKHORN_TUNE_ROWS_PER_WARP 32
#endif
#ifndef FLASHSINKHORN_TUNE_BLOCK_N
#define FLASHSINKHORN_TUNE_BLOCK_N 64
#endif
#ifndef FLASHSINKHORN_TUNE_STAGES
#define FLASHSINKHORN_TUNE_STAGES 3
#endif
#ifndef FLASHSINKHORN_TUNE_WGMMA_WARPGROUPS
#define FLASHSINKHORN_TUNE_WGMMA_WARPGROUPS 2
#endif
#ifndef FLASHSINKHORN_TUNE_K_UNROLL
#define FLASHSINKHORN_TUNE_K_UNROLL 2
#endif

namespace flashsinkhorn::detail::tile {

// ---- tensor-core softmin (tf32, bf16, fp32 = 3×TF32) -------------------------------------------
// 4 warps: enough to overlap MMA, exp and cp.async with 2 CTAs per SM, few enough that a 128-row
// block is 32 rows per warp (two m16 tiles share every B fragment loaded from shared memory).
inline constexpr int kWarps = 4;
inline constexpr int kThreads = kWarps * 32;
// Rows owned by one CTA: 4 warps × 2 × m16. Query operands are read from shared memory once per
// key tile, so 128 rows halve the key traffic per FLOP compared with 64.
inline constexpr int kRowsPerWarp = FLASHSINKHORN_TUNE_ROWS_PER_WARP;  // 32 = 2 m16 tiles
inline constexpr int kBlockM = kWarps * kRowsPerWarp;
static_assert(kRowsPerWarp % 16 == 0);
// Keys per tile: 8 n8 fragments → 2·8·4 = 64 fp32 accumulators per thread, the most that leaves
// registers for fragments and the 4 per-row LSE states without spilling at 2 CTAs/SM.
inline constexpr int kBlockN = FLASHSINKHORN_TUNE_BLOCK_N;
static_assert(kBlockN % 16 == 0 && kBlockN <= 128);
// 32-bit words of features per pipeline stage: 64 tf32/fp32 or 128 bf16 values, so d ≤ 64 (tf32)
// and d ≤ 128 (bf16) are one stage; larger d loops over chunks into the same score registers.
// Rows are padded to 16 words (two MMA k-steps, one 128-bit fragment load per lane).
inline constexpr int kChunkWords = 64;
inline constexpr int kRowWordMultiple = 16;
// cp.async ring depth: 3 stages hide one L2/HBM latency behind two tiles of MMA + exp.
inline constexpr int kStages = FLASHSINKHORN_TUNE_STAGES;
static_assert(kStages >= 2);
// Unroll of the k loop (16 words = 2 MMA k-steps per trip): 2 lets the scheduler overlap the next
// trip's fragment loads with this trip's MMAs (~168 registers). Measured on the H200 with
// tools/tune_variants.sh (2026-11-30, n = m = 50,000, d = 64): unroll 2 → 7.56 ms/iteration tf32,
// 4.77 bf16; unroll 1 → 8.47, 5.01; kBlockN = 32 → 8.17, 5.36; 16 rows per warp → 12.6, 5.91.
inline constexpr int kKUnroll = FLASHSINKHORN_TUNE_K_UNROLL;
// The whole query block stays resident in shared memory while ≤ this many bytes (4 chunks:
// d ≤ 256 tf32, d ≤ 512 bf16; with 3 key stages that is 226 KiB, just under the 227 KiB limit);
// above it the query chunk streams through the ring next to the key chunk.
inline constexpr int kResidentQueryBytes = 160 * 1024;

// ---- Hopper softmin (sm_90a: wgmma from shared memory, tf32 and bf16) ----------------------------
// The resident kernels (cp.async and copy engine) run one accumulator set per warpgroup at two
// CTAs per SM (≤ 128 registers per thread), the CTAs overlapping each other's MMAs and
// exponentials. Dropped after measurement (docs/cuda_backend.md, "tried and dropped"): the same
// kernel with two accumulator sets at one CTA per SM, a skewed warpgroup schedule, half tiles.
inline constexpr int kWgmmaCtasPerSm = 2;
// Warpgroups of 64 rows per CTA (they share the key tiles of the ring).
inline constexpr int kWgmmaWarpgroups = FLASHSINKHORN_TUNE_WGMMA_WARPGROUPS;
inline constexpr int kWgmmaThreads = kWgmmaWarpgroups * 128;
inline constexpr int kWgmmaBlockM = kWgmmaWarpgroups * 64;
// + the producer warpgroup: a whole one, because registers are reallocated per warpgroup
// (setmaxnreg) and ptxas budgets a CTA in warpgroups (288 threads would get 168 registers each).
inline constexpr int kWgmmaWsThreads = kWgmmaThreads + 128;
inline constexpr int kWgmmaWsProducerRegisters = 40;
inline constexpr int kWgmmaWsConsumerRegisters = 232;  // 2·128·232 + 128·40 ≤ 65,536
static_assert(kWgmmaWarpgroups * 128 * kWgmmaWsConsumerRegisters + 128 * kWgmmaWsProducerRegisters <= 65536);
// The warp-specialised streamed kernel (wide rows): stages of one key and one query panel (32 KiB),
// kWgmmaWsStreamedLead panels in flight per consumer.
inline constexpr int kWgmmaWsStreamedMaxStages = 7;
inline constexpr int kWgmmaWsStreamedLead = 2;
// Whole rows per stage: at two CTAs per SM (113 KiB each) the resident query block plus two
// 128-key stages fit up to 64 words (tf32 d ≤ 64, bf16 d ≤ 128: 32 + 2·32 KiB + β); wider rows
// use the streamed kernel. (96 words, the limit before session 2's end, needed 146 KiB: such rows
// fell back to the mma.sync kernel.)
inline constexpr int kWgmmaMaxRowWords = 64;
// Wider rows stream the query block through the ring next to the keys, one 32-word panel per
// stage (softmin_wgmma_streamed_kernel.cuh), rows padded to whole panels; always two CTAs per SM.
inline constexpr int kWgmmaStreamedCtasPerSm = 2;
// Ring depth: 4 stages while they fit, else fewer, at least 2.
inline constexpr int kWgmmaMaxStages = 4;
inline constexpr int kWgmmaMinStages = 2;

// ---- SIMT softmin (fp64; fp32 with FMA dots): plain FMA, correctness first --------------------
// One row per thread; 32 keys × 32 features per shared tile (8 KiB + padding in double).
// The fp32 mode's FMA-dot path (the default; FLASHSINKHORN_FP32_DOTS=3xtf32 turns it off) takes
// rows up to this padded width (fp32 pads to kRowWordMultiple): d·(one FMA) per score stays below
// the exponential's cost.
inline constexpr std::int64_t kSimtFp32MaxDim = 16;
inline constexpr int kBlockM64 = 128;
inline constexpr int kBlockN64 = 32;
inline constexpr int kChunk64 = 32;

// ---- storage ------------------------------------------------------------------------------------
// Cloud rows are padded with zeros to a multiple of this, so every tile load is in bounds; padded
// keys get bias −∞ and padded rows are never written.
inline constexpr int kRowPadding = 128;
static_assert(kRowPadding % kBlockM == 0 && kRowPadding % kBlockN == 0);
static_assert(kRowPadding % kBlockM64 == 0 && kRowPadding % kBlockN64 == 0);
static_assert(kRowPadding % 128 == 0);  // 128 = wgmma key tile; a partial last row block is fine

// Split-key: at most this many key ranges per row block, each at least kMinTilesPerSplit tiles,
// so the partial-state traffic stays below 1/kMinTilesPerSplit of the key traffic.
inline constexpr int kMaxSplits = 32;
inline constexpr int kMinTilesPerSplit = 4;

[[nodiscard]] constexpr std::int64_t round_up(std::int64_t value, std::int64_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

}  // namespace flashsinkhorn::detail::tile
