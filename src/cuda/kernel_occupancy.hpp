// How many CTAs of a kernel an SM holds, for the launchers' key-split plans (key_splits.hpp), and
// the opt-in to more than 48 KiB of dynamic shared memory that such a kernel needs.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <vector>

namespace flashsinkhorn::detail {

// Opts `kernel` in to `bytes` of dynamic shared memory on the current device (nothing to do up to
// 48 KiB). The opt-in is a property of the function on the device and a launch may use less, so each
// (kernel, device) is opted in once per thread for the most bytes asked so far: the launchers call
// this before every launch, and cudaFuncSetAttribute costs ~1.3 µs of host time (20 calls in a
// 10-iteration solve: bench/studies/solve_path_profile.py).
template <class Kernel>
cudaError_t allow_shared(Kernel kernel, int bytes) {
  if (bytes <= 48 * 1024) return cudaSuccess;
  struct opt_in {
    const void* kernel;
    int device;
    int bytes;
  };
  thread_local std::vector<opt_in> done;
  int device = 0;
  if (const cudaError_t status = cudaGetDevice(&device); status != cudaSuccess) return status;
  const void* key = reinterpret_cast<const void*>(kernel);
  auto known = std::find_if(done.begin(), done.end(), [&](const opt_in& o) { return o.kernel == key && o.device == device; });
  if (known != done.end() && known->bytes >= bytes) return cudaSuccess;
  const cudaError_t status = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
  if (status != cudaSuccess) return status;
  if (known != done.end()) {
    known->bytes = bytes;
  } else {
    done.push_back({key, device, bytes});
  }
  return cudaSuccess;
}

// CTAs per SM of `kernel` at `shared_bytes` on the current device (1 when the query fails), cached
// per thread for every (kernel, bytes, device) asked: the answer depends only on these, and one
// launch may size two kernels of the same signature (tf32 on narrow rows weighs the narrow kernel's
// key splits before the wgmma kernel's: softmin_launch.cu, launch_shape), which a single-entry cache
// would query again on every launch.
template <class Kernel>
int occupancy(Kernel kernel, int threads, int shared_bytes) {
  struct answer {
    const void* kernel;
    int bytes;
    int device;
    int ctas;
  };
  thread_local std::vector<answer> known;
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return 1;
  const void* key = reinterpret_cast<const void*>(kernel);
  const auto hit = std::find_if(known.begin(), known.end(), [&](const answer& a) {
    return a.kernel == key && a.bytes == shared_bytes && a.device == device;
  });
  if (hit != known.end()) return hit->ctas;
  int ctas = 1;
  if (allow_shared(kernel, shared_bytes) != cudaSuccess ||
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&ctas, kernel, threads, shared_bytes) != cudaSuccess) {
    (void)cudaGetLastError();
    ctas = 1;
  }
  known.push_back({key, shared_bytes, device, std::max(ctas, 1)});
  return known.back().ctas;
}

}  // namespace flashsinkhorn::detail
