// Stream-ordered device memory for the CUDA backend's buffers (device_buffer.hpp).
//
// Every solver owns a few dozen device buffers. Allocated with cudaMalloc and freed with cudaFree
// they cost a Python call on CUDA tensors 31 of each, 0.9 ms of host time at n = 10,000 (0.3 ms at
// n = 1,000; H200, bench/results/solve_path_profile_h200_2026-11-30_s11c.jsonl) — against 1.7 ms
// of GPU work — and cudaFree waits for the whole device. Here they come from one CUDA memory pool
// per device (cudaMallocFromPoolAsync / cudaFreeAsync, ordered on the stream that uses the buffer),
// and the pool keeps what is freed (release threshold: an eighth of the device's memory), so that
// the next solver of the same size reuses it without a call into the driver's allocator: the
// caching-allocator model of PyTorch and CuPy, on the runtime's own pools, with a bound because
// other allocators in the process (torch's) cannot make this one give memory back.
//
// Contracts:
//   - a buffer is used on its stream only, or on work ordered before its free on that stream;
//     the stream outlives the buffer (cuda_backend declares its stream before every buffer);
//   - while `stream` is being captured into a CUDA graph the allocation is a plain cudaMalloc,
//     which the capture rejects (graph_cache.hpp turns graphs off), as before the pool;
//   - a device without memory pools (cudaDevAttrMemoryPoolsSupported = 0) gets cudaMalloc/cudaFree;
//   - out of memory: the pools' cached memory is given back (after a device synchronisation) and the
//     allocation tried once more before out_of_memory is thrown;
//   - release_device_pools() (public: flashsinkhorn::release_cached_device_memory) gives every
//     pool's unused memory back;
//   - device_pool_statistics / reset_pool_peak (public: flashsinkhorn::device_memory,
//     reset_peak_device_memory) read the pool's own counters; buffers made during a capture or on
//     a device without pools (plain cudaMalloc) are not in them.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

namespace flashsinkhorn::detail {

struct device_allocation {
  void* data = nullptr;
  bool pooled = false;  // freed with cudaFreeAsync on its stream (else cudaFree)
};

// `bytes` (> 0) on the current device, ordered on `stream`. Throws out_of_memory / cuda_error.
device_allocation allocate_device(std::size_t bytes, cudaStream_t stream);

// Frees an allocation of allocate_device (ordered on `stream` when pooled). Never throws: errors
// are logged.
void free_device(const device_allocation& allocation, cudaStream_t stream) noexcept;

// Gives every pool's cached (unused) memory back to the driver. Throws cuda_error.
void release_device_pools();

// Bytes the current device's pool holds from the driver (in use or cached); 0 without a pool.
std::size_t pooled_bytes_reserved();

// The pool of GPU `device` in bytes: in use by buffers now, the most in use at once since the last
// reset_pool_peak (the pool's own high watermark, cudaMemPoolAttrUsedMemHigh), and held from the
// driver. Zeros while the device has no pool (no buffer made there yet, or no pool support).
struct pool_statistics {
  std::size_t in_use = 0;
  std::size_t peak_in_use = 0;
  std::size_t reserved = 0;
};
pool_statistics device_pool_statistics(int device);

// Starts the device pool's high watermark again from what is in use now. No-op without a pool.
void reset_pool_peak(int device);

}  // namespace flashsinkhorn::detail
