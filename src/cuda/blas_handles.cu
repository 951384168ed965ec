// The calling thread's cuBLAS and cuSOLVER handles (blas_handles.hpp).
#include "cuda/blas_handles.hpp"

#include <map>
#include <string>

#include "cuda/cuda_check.hpp"
#include "flashsinkhorn/error.hpp"

namespace flashsinkhorn::detail {
namespace {

// A thread's handles, one pair per device, destroyed with the thread.
struct thread_handles {
  std::map<int, cublasHandle_t> blas;
  std::map<int, cusolverDnHandle_t> solver;
  thread_handles() = default;
  thread_handles(const thread_handles&) = delete;
  thread_handles& operator=(const thread_handles&) = delete;
  ~thread_handles() {
    for (const auto& entry : blas) (void)cublasDestroy(entry.second);
    for (const auto& entry : solver) (void)cusolverDnDestroy(entry.second);
  }
};

thread_handles& handles_of_this_thread() {
  thread_local thread_handles handles;
  return handles;
}

int current_device() {
  int device = 0;
  FS_CUDA_CHECK(cudaGetDevice(&device));
  return device;
}

}  // namespace

void check_blas(cublasStatus_t status, const char* call) {
  if (status == CUBLAS_STATUS_ALLOC_FAILED) throw out_of_memory(std::string("cuBLAS call `") + call + "` ran out of memory");
  if (status != CUBLAS_STATUS_SUCCESS)
    throw cuda_error(std::string("cuBLAS call `") + call + "` failed: " + cublasGetStatusString(status));
}

void check_solver(cusolverStatus_t status, const char* call) {
  if (status == CUSOLVER_STATUS_ALLOC_FAILED)
    throw out_of_memory(std::string("cuSOLVER call `") + call + "` ran out of memory");
  if (status != CUSOLVER_STATUS_SUCCESS)
    throw cuda_error(std::string("cuSOLVER call `") + call + "` failed with status " + std::to_string(status));
}

cublasHandle_t thread_blas(cudaStream_t stream) {
  cublasHandle_t& handle = handles_of_this_thread().blas[current_device()];
  if (handle == nullptr) check_blas(cublasCreate(&handle), "cublasCreate");
  check_blas(cublasSetStream(handle, stream), "cublasSetStream");
  return handle;
}

cusolverDnHandle_t thread_solver(cudaStream_t stream) {
  cusolverDnHandle_t& handle = handles_of_this_thread().solver[current_device()];
  if (handle == nullptr) check_solver(cusolverDnCreate(&handle), "cusolverDnCreate");
  check_solver(cusolverDnSetStream(handle, stream), "cusolverDnSetStream");
  return handle;
}

}  // namespace flashsinkhorn::detail
