// The sums of the O(n) vectors a solve reduces (weights, masses, the dual value's terms): one CTA per
// sum, each thread accumulating a strided share in order, then cub::BlockReduce. One launch sums
// several vectors, with no temporary storage and no host-side query (CUB's device-wide reduce asks the
// occupancy API on every call and launches two kernels, which is what a call at n ≲ 10⁴ waits on:
// docs/cuda_backend.md, "When the GPU waits"). Deterministic: a given count is summed in one order.
// A CTA streams ~100 GB/s, so 10⁶ terms take ~0.1 ms, far under a Sinkhorn iteration at that size.
#pragma once

#include <cub/block/block_reduce.cuh>

namespace flashsinkhorn::detail {

constexpr int kBlockSumThreads = 512;

// Σ over the CTA of each thread's `partial`, valid in thread 0. Every thread of the CTA calls it.
__device__ inline double block_sum(double partial) {
  using reduce = cub::BlockReduce<double, kBlockSumThreads>;
  __shared__ typename reduce::TempStorage storage;
  return reduce(storage).Sum(partial);
}

}  // namespace flashsinkhorn::detail
