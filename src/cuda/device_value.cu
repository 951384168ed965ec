// The solve's value into a caller's CUDA array (device_value.hpp).
#include <cuda_runtime.h>

#include "cuda/caller_stream.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/device_value.hpp"
#include "flashsinkhorn/error.hpp"

namespace flashsinkhorn::detail {
namespace {

template <class T>
__global__ void store_value_kernel(T* out, double value) {
  *out = static_cast<T>(value);
}

}  // namespace

void write_value_to_device(double value, const mutable_vector_view& out, std::optional<std::uintptr_t> caller_stream) {
  if (out.space != memory_space::cuda) throw invalid_argument("write_value_to_device: the output is not in CUDA memory");
  const cudaStream_t stream = stream_of(caller_stream);
  FS_CUDA_CHECK(cudaSetDevice(out.device));
  if (out.type == dtype::float32) {
    store_value_kernel<<<1, 1, 0, stream>>>(static_cast<float*>(out.data), value);
  } else {
    store_value_kernel<<<1, 1, 0, stream>>>(static_cast<double*>(out.data), value);
  }
  FS_CUDA_CHECK(cudaGetLastError());
}

}  // namespace flashsinkhorn::detail
