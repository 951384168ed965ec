// The caller's stream, as a CUDA backend on the caller's arrays sees it (options::cuda_stream): the
// backend computes on a stream of its own (so that iteration blocks can become CUDA graphs) and
// orders itself after the caller's stream wherever it touches the caller's memory — before reading
// the inputs, before writing an output — and the caller's stream after its own once an output is
// written, each with an event, never a host wait. Move-only.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <optional>
#include <utility>

#include "cuda/cuda_check.hpp"

namespace flashsinkhorn::detail {

// options::cuda_stream as a stream to enqueue on: unset or 0 is the legacy default stream.
inline cudaStream_t stream_of(std::optional<std::uintptr_t> caller_stream) {
  return caller_stream && *caller_stream != 0 ? reinterpret_cast<cudaStream_t>(*caller_stream) : cudaStreamLegacy;
}

class caller_stream {
 public:
  caller_stream() = default;  // no caller: nothing to order after

  // `stream` may be the legacy default stream (cudaStreamLegacy, or 0).
  explicit caller_stream(cudaStream_t stream) : stream_(stream == nullptr ? cudaStreamLegacy : stream) {
    FS_CUDA_CHECK(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming));
  }
  ~caller_stream() {
    if (event_ != nullptr) FS_CUDA_CHECK_LOG(cudaEventDestroy(event_));
  }
  caller_stream(caller_stream&& other) noexcept
      : stream_(std::exchange(other.stream_, nullptr)), event_(std::exchange(other.event_, nullptr)) {}
  caller_stream& operator=(caller_stream&& other) noexcept {
    if (this != &other) {
      if (event_ != nullptr) FS_CUDA_CHECK_LOG(cudaEventDestroy(event_));
      stream_ = std::exchange(other.stream_, nullptr);
      event_ = std::exchange(other.event_, nullptr);
    }
    return *this;
  }
  caller_stream(const caller_stream&) = delete;
  caller_stream& operator=(const caller_stream&) = delete;

  [[nodiscard]] bool present() const noexcept { return event_ != nullptr; }
  [[nodiscard]] cudaStream_t get() const noexcept { return stream_; }

  // Work enqueued on `own` from now on runs after everything enqueued on the caller's stream so far.
  void order_after(cudaStream_t own) const {
    if (event_ == nullptr) return;
    FS_CUDA_CHECK(cudaEventRecord(event_, stream_));
    FS_CUDA_CHECK(cudaStreamWaitEvent(own, event_, 0));
  }

  // Work enqueued on the caller's stream from now on runs after everything enqueued on `own` so far
  // (an output written on `own` is then the caller's to read in its stream's order). (A wait takes
  // the event's state at the call, so the one event serves both directions.)
  void order_caller_after(cudaStream_t own) const {
    if (event_ == nullptr) return;
    FS_CUDA_CHECK(cudaEventRecord(event_, own));
    FS_CUDA_CHECK(cudaStreamWaitEvent(stream_, event_, 0));
  }

 private:
  cudaStream_t stream_ = nullptr;
  cudaEvent_t event_ = nullptr;
};

}  // namespace flashsinkhorn::detail
