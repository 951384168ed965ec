// Error macros for CUDA runtime calls, in pairs (STYLE.md): the throwing form for normal code and a
// log-only form for destructors, which must not throw.
//   FS_CUDA_CHECK(cudaMalloc(&p, bytes));   // throws cuda_error / out_of_memory naming the call
//   FS_CUDA_CHECK_LOG(cudaFree(p));         // prints to stderr, never throws
//   FS_CUDA_CHECK_LAUNCH();                 // after a <<<>>> launch (cudaGetLastError)
#pragma once

#include <cuda_runtime.h>

#include <cstdio>
#include <string>

#include "flashsinkhorn/error.hpp"

namespace flashsinkhorn::detail {

[[noreturn]] inline void throw_cuda_error(cudaError_t status, const char* call, const char* file,
                                          int line) {
  std::string message = std::string("CUDA call `") + call + "` failed at " + file + ":" +
                        std::to_string(line) + ": " + cudaGetErrorName(status) + " (" +
                        cudaGetErrorString(status) + ")";
  if (status == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();  // clear the sticky-free allocation error so later calls work
    throw out_of_memory(message);
  }
  throw cuda_error(message);
}

inline void log_cuda_error(cudaError_t status, const char* call, const char* file, int line) noexcept {
  std::fprintf(stderr, "flashsinkhorn: CUDA call `%s` failed at %s:%d: %s (%s)\n", call, file, line,
               cudaGetErrorName(status), cudaGetErrorString(status));
}

}  // namespace flashsinkhorn::detail

#define FS_CUDA_CHECK(call)                                                             \
  do {                                                                                  \
    const cudaError_t fs_status_ = (call);                                              \
    if (fs_status_ != cudaSuccess)                                                      \
      ::flashsinkhorn::detail::throw_cuda_error(fs_status_, #call, __FILE__, __LINE__); \
  } while (0)

#define FS_CUDA_CHECK_LOG(call)                                                       \
  do {                                                                                \
    const cudaError_t fs_status_ = (call);                                            \
    if (fs_status_ != cudaSuccess)                                                    \
      ::flashsinkhorn::detail::log_cuda_error(fs_status_, #call, __FILE__, __LINE__); \
  } while (0)

#define FS_CUDA_CHECK_LAUNCH() FS_CUDA_CHECK(cudaGetLastError())
