// FS_HOST_DEVICE marks functions shared by the CPU backend (g++) and the CUDA kernels (nvcc).
#pragma once

#if defined(__CUDACC__)
#define FS_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define FS_HOST_DEVICE inline
#endif
