// RAII owner of one cudaMalloc allocation (move-only). Sizes are in elements of T.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <string>
#include <utility>

#include "cuda/cuda_check.hpp"

namespace flashsinkhorn::detail {

template <class T>
class device_buffer {
 public:
  device_buffer() = default;
  explicit device_buffer(std::size_t count) : count_(count) {
    if (count == 0) return;
    const cudaError_t status = cudaMalloc(reinterpret_cast<void**>(&data_), count * sizeof(T));
    if (status == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();
      throw out_of_memory("CUDA device out of memory: cudaMalloc of " +
                          std::to_string(count * sizeof(T)) + " bytes failed");
    }
    FS_CUDA_CHECK(status);
  }
  ~device_buffer() { release(); }

  device_buffer(device_buffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), count_(std::exchange(other.count_, 0)) {}
  device_buffer& operator=(device_buffer&& other) noexcept {
    if (this != &other) {
      release();
      data_ = std::exchange(other.data_, nullptr);
      count_ = std::exchange(other.count_, 0);
    }
    return *this;
  }
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;

  [[nodiscard]] T* data() const noexcept { return data_; }
  [[nodiscard]] std::size_t size() const noexcept { return count_; }
  [[nodiscard]] std::size_t bytes() const noexcept { return count_ * sizeof(T); }

 private:
  void release() noexcept {
    if (data_ != nullptr) FS_CUDA_CHECK_LOG(cudaFree(data_));
    data_ = nullptr;
    count_ = 0;
  }

  T* data_ = nullptr;
  std::size_t count_ = 0;
};

// Grows `buffer` to at least `count` elements (contents not kept) and returns its data.
template <class T>
T* reserve(device_buffer<T>& buffer, std::size_t count) {
  if (buffer.size() < count) {
    buffer = device_buffer<T>();  // free first: the peak stays one buffer
    buffer = device_buffer<T>(count);
  }
  return buffer.data();
}

}  // namespace flashsinkhorn::detail
