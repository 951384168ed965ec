#include "cuda_memory_probe.hpp"

#ifdef FLASHSINKHORN_CLI_HAS_CUDA
#include <cuda_runtime_api.h>
#endif

namespace flashsinkhorn::cli {

#ifdef FLASHSINKHORN_CLI_HAS_CUDA

std::optional<cuda_memory_snapshot> cuda_memory_in_use(int device) {
  int previous = 0;
  if (cudaGetDevice(&previous) != cudaSuccess) return std::nullopt;
  if (cudaSetDevice(device) != cudaSuccess) {
    static_cast<void>(cudaGetLastError());  // clear the error so later CUDA calls are not blamed for it
    return std::nullopt;
  }
  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
  const cudaError_t status = cudaMemGetInfo(&free_bytes, &total_bytes);
  static_cast<void>(cudaSetDevice(previous));
  if (status != cudaSuccess) {
    static_cast<void>(cudaGetLastError());
    return std::nullopt;
  }
  return cuda_memory_snapshot{total_bytes - free_bytes, total_bytes};
}

#else

std::optional<cuda_memory_snapshot> cuda_memory_in_use(int) { return std::nullopt; }

#endif

}  // namespace flashsinkhorn::cli
