// Launching a kernel in clusters of two CTAs (sm_90): the streamed softmin's key pairs
// (softmin_wgmma_ws_streamed_kernel.cuh) and the streamed plan pass's value-tile pairs
// (plan_wgmma_streamed_kernel.cuh), whose CTAs share panels by TMA multicast. The grid is 1-D:
// CTAs 2q and 2q + 1 form cluster q, and the kernel maps its blockIdx.x to its work.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <utility>

namespace flashsinkhorn::detail {

// `ctas` must be even; `args` are passed as the kernel's parameters (cudaLaunchKernelEx).
template <class... Params, class... Args>
cudaError_t launch_cluster_pairs(void (*kernel)(Params...), std::int64_t ctas, int threads, int shared_bytes,
                                 cudaStream_t stream, Args&&... args) {
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned>(ctas));
  config.blockDim = dim3(static_cast<unsigned>(threads));
  config.dynamicSmemBytes = static_cast<std::size_t>(shared_bytes);
  config.stream = stream;
  cudaLaunchAttribute cluster{};
  cluster.id = cudaLaunchAttributeClusterDimension;
  cluster.val.clusterDim.x = 2;
  cluster.val.clusterDim.y = 1;
  cluster.val.clusterDim.z = 1;
  config.attrs = &cluster;
  config.numAttrs = 1;
  return cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...);
}

}  // namespace flashsinkhorn::detail
