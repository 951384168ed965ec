// The stream a CUDA backend orders all of its work on (move-only): either its own, non-blocking (no
// implicit ordering with the legacy default stream, so other libraries' work on it neither waits for
// nor delays ours) and taken from the device's stream pool, or borrowed from the caller, who then
// owns it.
#pragma once

#include <cuda_runtime.h>

#include <utility>

#include "cuda/cuda_check.hpp"
#include "cuda/stream_pool.hpp"

namespace flashsinkhorn::detail {

class cuda_stream {
 public:
  cuda_stream() = default;

  // A non-blocking stream of its own on the current device (stream_pool.hpp: given back to the
  // device's pool with this object, not destroyed).
  [[nodiscard]] static cuda_stream create() {
    cuda_stream s;
    FS_CUDA_CHECK(cudaGetDevice(&s.device_));
    s.stream_ = acquire_stream(s.device_);
    s.owned_ = true;
    return s;
  }

  // The caller's stream (cudaStreamLegacy and cudaStreamPerThread included); never destroyed here.
  [[nodiscard]] static cuda_stream borrow(cudaStream_t stream) {
    cuda_stream s;
    s.stream_ = stream;
    return s;
  }

  ~cuda_stream() { release(); }
  cuda_stream(cuda_stream&& other) noexcept
      : stream_(std::exchange(other.stream_, nullptr)), owned_(std::exchange(other.owned_, false)),
        device_(other.device_) {}
  cuda_stream& operator=(cuda_stream&& other) noexcept {
    if (this != &other) {
      release();
      stream_ = std::exchange(other.stream_, nullptr);
      owned_ = std::exchange(other.owned_, false);
      device_ = other.device_;
    }
    return *this;
  }
  cuda_stream(const cuda_stream&) = delete;
  cuda_stream& operator=(const cuda_stream&) = delete;

  [[nodiscard]] cudaStream_t get() const noexcept { return stream_; }

  // The legacy default stream (the handle 0 under the default --default-stream legacy, or
  // cudaStreamLegacy) cannot be captured into a CUDA graph.
  [[nodiscard]] bool is_legacy() const noexcept { return stream_ == nullptr || stream_ == cudaStreamLegacy; }

 private:
  void release() noexcept {
    if (owned_) release_stream(device_, stream_);
    stream_ = nullptr;
    owned_ = false;
  }

  cudaStream_t stream_ = nullptr;
  bool owned_ = false;
  int device_ = 0;  // where an owned stream was made
};

}  // namespace flashsinkhorn::detail
