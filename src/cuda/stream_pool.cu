// The backends' streams, kept per device (stream_pool.hpp).
#include <mutex>
#include <unordered_map>
#include <vector>

#include "cuda/cuda_check.hpp"
#include "cuda/stream_pool.hpp"

namespace flashsinkhorn::detail {
namespace {

struct stream_pool {
  std::mutex mutex;
  std::unordered_map<int, std::vector<cudaStream_t>> free;  // device → streams nobody holds
};

stream_pool& pool() {
  static auto* instance = new stream_pool;  // never destroyed (see stream_pool.hpp)
  return *instance;
}

}  // namespace

cudaStream_t acquire_stream(int device) {
  {
    stream_pool& p = pool();
    const std::lock_guard<std::mutex> lock(p.mutex);
    std::vector<cudaStream_t>& kept = p.free[device];
    if (!kept.empty()) {
      cudaStream_t stream = kept.back();
      kept.pop_back();
      return stream;
    }
  }
  cudaStream_t stream = nullptr;
  FS_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  return stream;
}

void release_stream(int device, cudaStream_t stream) noexcept {
  if (stream == nullptr) return;
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream, &capture) != cudaSuccess || capture != cudaStreamCaptureStatusNone) {
    cudaGraph_t partial = nullptr;  // a capture left open (a failed one): ended and dropped with its stream
    if (cudaStreamEndCapture(stream, &partial) == cudaSuccess && partial != nullptr) cudaGraphDestroy(partial);
    (void)cudaGetLastError();
    FS_CUDA_CHECK_LOG(cudaStreamDestroy(stream));
    return;
  }
  try {
    stream_pool& p = pool();
    const std::lock_guard<std::mutex> lock(p.mutex);
    p.free[device].push_back(stream);
  } catch (...) {  // no memory for the list: the stream goes instead
    FS_CUDA_CHECK_LOG(cudaStreamDestroy(stream));
  }
}

}  // namespace flashsinkhorn::detail
