// FS_HOST_DEVICE marks functions shared by the CPU backend (g++) and the CUDA kernels (nvcc);
// FS_UNROLL asks either compiler to unroll the loop that follows.
#pragma once

#if defined(__CUDACC__)
#define FS_HOST_DEVICE __host__ __device__ __forceinline__
#define FS_UNROLL _Pragma("unroll")
#else
#define FS_HOST_DEVICE inline
#define FS_UNROLL _Pragma("GCC unroll 16")
#endif
