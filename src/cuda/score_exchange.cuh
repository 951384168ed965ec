// The score exchange of a split-scores cluster pair (plan_wgmma_streamed_kernel.cuh,
// plan_pairing::split_scores): the two CTAs hold the same row block, so they need the same scores
// S = Σ_c Q_c·K_cᵀ of every key tile; CTA r sums the panels c ≡ r (mod 2) alone, sends its partial
// accumulator into the partner's inbox and adds the partner's to its own. Both then hold
// S₀ + S₁ = S₁ + S₀ — floating-point addition commutes, so the two sums are the same bits.
//
// Per consumer warpgroup w (64 rows × 128 keys, 64 floats a thread):
//   inbox[w]     32 KiB of this CTA's shared memory that the partner's warpgroup w writes, as
//                [16 float4 of a thread][128 threads] (a warp reads 512 consecutive bytes a step)
//   landed[w]    completes when the partner's 32 KiB have landed in inbox[w] (st.async completes
//                its bytes there; one arrival, this warpgroup's, announces them)
//   read[w]      completes when the partner's warpgroup w has read what this CTA sent it (one
//                arrival per partner warp): until then this CTA must not send the next tile's
// Tile t uses phase t of both; every consumer thread of both CTAs calls exchange once a key tile.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/tile_config.hpp"
#include "cuda/tma.cuh"
#include "cuda/wgmma.cuh"

namespace flashsinkhorn::detail::kernels {

namespace score_exchange {
inline constexpr int kWarpgroups = tile::kWgmmaThreads / 128;
inline constexpr int kVectors = wgmma::kAccumulators / 4;                          // float4 a thread
inline constexpr std::uint32_t kWarpgroupBytes = kVectors * 128 * sizeof(float4);  // 32 KiB
inline constexpr int kInboxBytes = kWarpgroups * kWarpgroupBytes;                 // 64 KiB a CTA
}  // namespace score_exchange

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900

struct score_inbox {
  std::uint32_t inbox;    // shared address of kInboxBytes of this CTA's shared memory, 16-byte aligned
  std::uint64_t* landed;  // [kWarpgroups]
  std::uint64_t* read;    // [kWarpgroups]
};

// By one thread before the CTA barrier and the cluster barrier that precede any exchange.
__device__ __forceinline__ void init_score_inbox(const score_inbox& box) {
  for (int w = 0; w < score_exchange::kWarpgroups; ++w) {
    tma::barrier_init(&box.landed[w], 1);
    tma::barrier_init(&box.read[w], 4);  // the partner warpgroup's four warps
  }
  tma::barrier_init_fence();
}

__device__ __forceinline__ float4 load_shared_vector(std::uint32_t address) {
  float4 v;
  asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];\n"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
               : "r"(address)
               : "memory");
  return v;
}

// Tile `tile`'s exchange for this thread of consumer warpgroup `warpgroup`: `scores` holds this
// CTA's partial sum on entry and the pair's full sum on return.
__device__ __forceinline__ void exchange_scores(const score_inbox& box, float (&scores)[wgmma::kAccumulators],
                                                int warpgroup, int tile, unsigned partner) {
  constexpr std::uint32_t kStride = 128 * sizeof(float4);  // from one float4 of a thread to its next
  const int parity = tile & 1;
  const std::uint32_t mine =
      box.inbox + warpgroup * score_exchange::kWarpgroupBytes + (threadIdx.x % 128) * sizeof(float4);
  if (tile > 0) tma::wait(&box.read[warpgroup], parity ^ 1);  // the partner has read tile − 1's
  const std::uint32_t remote = tma::address_in_cta(mine, partner);
  const std::uint32_t remote_landed = tma::address_in_cta(tma::smem_address(&box.landed[warpgroup]), partner);
#pragma unroll
  for (int v = 0; v < score_exchange::kVectors; ++v)
    tma::store_async(remote + v * kStride,
                     make_float4(scores[4 * v], scores[4 * v + 1], scores[4 * v + 2], scores[4 * v + 3]), remote_landed);
  if (threadIdx.x % 128 == 0) tma::arrive_expect_bytes(&box.landed[warpgroup], score_exchange::kWarpgroupBytes);
  tma::wait(&box.landed[warpgroup], parity);
#pragma unroll
  for (int v = 0; v < score_exchange::kVectors; ++v) {
    const float4 theirs = load_shared_vector(mine + v * kStride);
    scores[4 * v] += theirs.x;
    scores[4 * v + 1] += theirs.y;
    scores[4 * v + 2] += theirs.z;
    scores[4 * v + 3] += theirs.w;
  }
  __syncwarp();  // every lane's reads of the inbox are done
  if (threadIdx.x % 32 == 0) tma::arrive_in_cta(&box.read[warpgroup], partner);
}

#endif  // __CUDA_ARCH__ >= 900

}  // namespace flashsinkhorn::detail::kernels
