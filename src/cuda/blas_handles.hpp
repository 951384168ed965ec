// The cuBLAS and cuSOLVER handles of the calling thread on the current device, made on first use
// and kept for the thread's life (one per thread and device, as cuBLAS advises: a handle made per
// call would create it, and its workspace, every time), bound to `stream` before they are
// returned; and their statuses as the library's exceptions.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cusolverDn.h>

namespace flashsinkhorn::detail {

cublasHandle_t thread_blas(cudaStream_t stream);
cusolverDnHandle_t thread_solver(cudaStream_t stream);

// Throws out_of_memory (an allocation failed) or cuda_error naming `call` unless the call succeeded.
void check_blas(cublasStatus_t status, const char* call);
void check_solver(cusolverStatus_t status, const char* call);

}  // namespace flashsinkhorn::detail
