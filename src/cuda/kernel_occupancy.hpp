// How many CTAs of a kernel an SM holds, for the launchers' key-split plans (key_splits.hpp), and
// the opt-in to more than 48 KiB of dynamic shared memory that such a kernel needs.
#pragma once

#include <cuda_runtime.h>

namespace flashsinkhorn::detail {

// Opts `kernel` in to `bytes` of dynamic shared memory (nothing to do up to 48 KiB).
template <class Kernel>
cudaError_t allow_shared(Kernel kernel, int bytes) {
  if (bytes <= 48 * 1024) return cudaSuccess;
  return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
}

// CTAs per SM of `kernel` at `shared_bytes` on the current device (1 when the query fails), cached
// per thread for the last (kernel, bytes, device): the answer depends only on these.
template <class Kernel>
int occupancy(Kernel kernel, int threads, int shared_bytes) {
  thread_local const void* cached_kernel = nullptr;
  thread_local int cached_bytes = -1;
  thread_local int cached_device = -1;
  thread_local int cached_ctas = 1;
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return 1;
  const void* key = reinterpret_cast<const void*>(kernel);
  if (cached_kernel != key || cached_bytes != shared_bytes || cached_device != device) {
    int ctas = 1;
    if (allow_shared(kernel, shared_bytes) != cudaSuccess ||
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&ctas, kernel, threads, shared_bytes) != cudaSuccess) {
      (void)cudaGetLastError();
      ctas = 1;
    }
    cached_kernel = key;
    cached_bytes = shared_bytes;
    cached_device = device;
    cached_ctas = ctas < 1 ? 1 : ctas;
  }
  return cached_ctas;
}

}  // namespace flashsinkhorn::detail
