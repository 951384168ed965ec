// RAII owner of one device allocation (move-only), stream-ordered: allocated on a stream from the
// device's memory pool and freed on that stream (device_memory_pool.hpp), so that a solver's
// buffers cost no cudaMalloc/cudaFree once the pool holds memory. Sizes are in elements of T.
// Contract: the buffer is used on its stream (or by work ordered before its free on that stream),
// and the stream outlives the buffer.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <utility>
#include <vector>

#include "cuda/cuda_check.hpp"
#include "cuda/device_memory_pool.hpp"

namespace flashsinkhorn::detail {

template <class T>
class device_buffer {
 public:
  device_buffer() = default;
  device_buffer(std::size_t count, cudaStream_t stream) : count_(count), stream_(stream) {
    if (count > 0) allocation_ = allocate_device(count * sizeof(T), stream);
  }
  ~device_buffer() { release(); }

  device_buffer(device_buffer&& other) noexcept
      : allocation_(std::exchange(other.allocation_, device_allocation{})),
        count_(std::exchange(other.count_, 0)),
        stream_(other.stream_) {}
  device_buffer& operator=(device_buffer&& other) noexcept {
    if (this != &other) {
      release();
      allocation_ = std::exchange(other.allocation_, device_allocation{});
      count_ = std::exchange(other.count_, 0);
      stream_ = other.stream_;
    }
    return *this;
  }
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;

  [[nodiscard]] T* data() const noexcept { return static_cast<T*>(allocation_.data); }
  [[nodiscard]] std::size_t size() const noexcept { return count_; }
  [[nodiscard]] std::size_t bytes() const noexcept { return count_ * sizeof(T); }

 private:
  void release() noexcept {
    free_device(allocation_, stream_);
    allocation_ = device_allocation{};
    count_ = 0;
  }

  device_allocation allocation_;
  std::size_t count_ = 0;
  cudaStream_t stream_ = nullptr;
};

// Grows `buffer` to at least `count` elements on `stream` (contents not kept) and returns its data.
template <class T>
T* reserve(device_buffer<T>& buffer, std::size_t count, cudaStream_t stream) {
  if (buffer.size() < count) {
    buffer = device_buffer<T>();  // free first: the peak stays one buffer
    buffer = device_buffer<T>(count, stream);
  }
  return buffer.data();
}

// Grows `buffer` to hold `values` and copies them in on `stream` (pageable memory: the copy has read
// `values` when this returns); returns its data.
template <class T>
T* upload(device_buffer<T>& buffer, const std::vector<T>& values, cudaStream_t stream) {
  T* data = reserve(buffer, values.size(), stream);
  FS_CUDA_CHECK(cudaMemcpyAsync(data, values.data(), values.size() * sizeof(T), cudaMemcpyHostToDevice, stream));
  return data;
}

}  // namespace flashsinkhorn::detail
