// Hopper bulk copies and shared-memory barriers (sm_90; PTX ISA "mbarrier" and "cp.async.bulk"):
// the tensor-memory-accelerator loads that fill the wgmma kernels' panels, and the mbarriers that
// tell a consumer a stage has landed (full) and the producer that a stage may be refilled (empty).
//
// Phases: an mbarrier completes a phase when its pending arrivals (and, for expect_tx, its pending
// transaction bytes) reach zero; waiters name the phase by its parity. A stage used for the k-th
// time is waited on with parity k mod 2.
#pragma once

#include <cuda.h>  // CUtensorMap (a by-value kernel parameter)

#include <cstdint>

#include "cuda/softmin_kernel.cuh"  // smem_address

namespace flashsinkhorn::detail::tma {

using kernels::smem_address;

// Position in a ring of `stages` stages: the stage of the current tile and the parity of its use
// (the k-th use of a stage waits on parity k mod 2). Advancing by one tile replaces t mod S and
// t / S, integer divisions by a run-time S, with a compare.
struct ring_position {
  int stage = 0;
  int parity = 0;
  __host__ __device__ void advance(int stages) {
    if (++stage == stages) {
      stage = 0;
      parity ^= 1;
    }
  }
};

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900

__device__ __forceinline__ void barrier_init(std::uint64_t* barrier, int arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_address(barrier)), "r"(arrivals) : "memory");
}

// Makes the initialised barriers visible to the other threads and to the copy engine (followed by
// a CTA barrier).
__device__ __forceinline__ void barrier_init_fence() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

// A ring's barriers, by one thread before a CTA barrier: full[s] completes on the producer's
// expect_tx arrival and its bytes, empty[s] on `consumers` arrivals; `query_full` (if any) like a
// full barrier.
__device__ __forceinline__ void init_ring_barriers(std::uint64_t* full, std::uint64_t* empty, int stages,
                                                   int consumers, std::uint64_t* query_full = nullptr) {
  for (int s = 0; s < stages; ++s) {
    barrier_init(&full[s], 1);
    barrier_init(&empty[s], consumers);
  }
  if (query_full != nullptr) barrier_init(query_full, 1);
  barrier_init_fence();
}

__device__ __forceinline__ void arrive(std::uint64_t* barrier) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_address(barrier)) : "memory");
}

// One arrival that also announces `bytes` of copies that will complete on this barrier.
__device__ __forceinline__ void arrive_expect_bytes(std::uint64_t* barrier, std::uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_address(barrier)), "r"(bytes)
               : "memory");
}

// True once the phase of parity `parity` has completed (may also return false before that).
__device__ __forceinline__ bool try_wait(std::uint64_t* barrier, int parity) {
  std::uint32_t done;
  asm volatile(
      "{\n.reg .pred p;\n"
      "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
      "selp.u32 %0, 1, 0, p;\n}\n"
      : "=r"(done)
      : "r"(smem_address(barrier)), "r"(parity)
      : "memory");
  return done != 0;
}

// Blocks until the phase of parity `parity` has completed.
__device__ __forceinline__ void wait(std::uint64_t* barrier, int parity) {
  asm volatile(
      "{\n.reg .pred done;\n"
      "wait_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra wait_%=;\n}\n" ::"r"(smem_address(barrier)),
      "r"(parity)
      : "memory");
}

// wait(), for a thread with registers to spare (a producer): a wait longer than kWaitTrapCycles
// (~10 s at 2 GHz; no legitimate stage takes that long) traps, so that a pipeline bug surfaces as
// a launch failure (a CUDA error, a failed test) instead of a hung device. (In the consumers the
// clock's registers would cost spills: there the producer's trap ends the grid.)
inline constexpr long long kWaitTrapCycles = 20'000'000'000LL;

__device__ __forceinline__ void wait_or_trap(std::uint64_t* barrier, int parity) {
  if (try_wait(barrier, parity)) return;
  const long long start = clock64();
  while (!try_wait(barrier, parity)) {
    if (clock64() - start > kWaitTrapCycles) __trap();
  }
}

// Copies the box at (column `col`, row `row`) of the 2-d tensor `map` into shared memory at `dst`
// (laid out as the map's swizzle says); completes `bytes` of the barrier's transaction count.
__device__ __forceinline__ void load_2d(void* dst, const CUtensorMap* map, int col, int row, std::uint64_t* barrier) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n" ::"r"(
          smem_address(dst)),
      "l"(reinterpret_cast<std::uint64_t>(map)), "r"(col), "r"(row), "r"(smem_address(barrier))
      : "memory");
}

// Copies `bytes` (a multiple of 16, both addresses 16-byte aligned) from global to shared memory.
__device__ __forceinline__ void load_1d(void* dst, const void* src, std::uint32_t bytes, std::uint64_t* barrier) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
                   smem_address(dst)),
               "l"(src), "r"(bytes), "r"(smem_address(barrier))
               : "memory");
}

// Clusters (the streamed softmin's key pairs, softmin_wgmma_ws_streamed_kernel.cuh, and the streamed
// plan pass's value-tile pairs, plan_wgmma_streamed_kernel.cuh): a CTA's rank
// in its cluster, a barrier over every thread of the cluster (release / acquire: the writes and
// barrier initialisations before it are visible to the other CTAs after it), an arrival on the
// barrier at the same offset in CTA `rank`'s shared memory, and a copy that lands at `dst`'s offset
// and completes its bytes on `barrier`'s offset in every CTA of `cta_mask` (bit r: rank r).
__device__ __forceinline__ unsigned cluster_rank() {
  unsigned rank;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(rank));
  return rank;
}

__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;\n" ::: "memory");
}

// `address` (a shared::cta address of this CTA) as the shared::cluster address of the same offset
// in CTA `rank`'s shared memory.
__device__ __forceinline__ std::uint32_t address_in_cta(std::uint32_t address, unsigned rank) {
  std::uint32_t remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(address), "r"(rank));
  return remote;
}

__device__ __forceinline__ void arrive_in_cta(std::uint64_t* barrier, unsigned rank) {
  asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];\n" ::"r"(address_in_cta(smem_address(barrier), rank))
               : "memory");
}

// Stores 16 bytes at `remote` (a shared::cluster address, address_in_cta) and completes them on the
// barrier at `remote_barrier` (in the same CTA as `remote`; its expect_tx counts them).
__device__ __forceinline__ void store_async(std::uint32_t remote, float4 value, std::uint32_t remote_barrier) {
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.f32 [%0], {%1, %2, %3, %4}, [%5];\n" ::"r"(
                   remote),
               "f"(value.x), "f"(value.y), "f"(value.z), "f"(value.w), "r"(remote_barrier)
               : "memory");
}

__device__ __forceinline__ void load_2d_multicast(void* dst, const CUtensorMap* map, int col, int row,
                                                  std::uint64_t* barrier, std::uint16_t cta_mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, {%2, "
      "%3}], [%4], %5;\n" ::"r"(smem_address(dst)),
      "l"(reinterpret_cast<std::uint64_t>(map)), "r"(col), "r"(row), "r"(smem_address(barrier)), "h"(cta_mask)
      : "memory");
}

// A ring's releases in a cluster pair: a stage that both CTAs' producers fill (half each, by
// multicast) is released to both, one arrival per consumer warp on this CTA's empty barrier and one
// on the partner's (the plain .release.cta arrive: a .release.cluster one fences every warp, which
// made session 42's first key pairs 2.6× slower); without pairs every consumer thread arrives on its
// own. stage_releases: the arrivals an empty barrier then counts, for `consumer_threads` consumers.
template <bool kClusterPairs>
constexpr int stage_releases(int consumer_threads) {
  return kClusterPairs ? 2 * consumer_threads / 32 : consumer_threads;
}

template <bool kClusterPairs>
__device__ __forceinline__ void release_stage(std::uint64_t* empty, unsigned rank) {
  if constexpr (kClusterPairs) {
    __syncwarp();  // every lane's reads of the stage are done (their wgmma groups waited on)
    if (threadIdx.x % 32 == 0) {
      arrive(empty);
      arrive_in_cta(empty, rank ^ 1u);
    }
  } else {
    arrive(empty);
  }
}

#endif  // __CUDA_ARCH__ >= 900

}  // namespace flashsinkhorn::detail::tma
