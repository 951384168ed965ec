// Non-owning views of host or CUDA device arrays: the only way data enters or leaves the library.
// Framework-free on purpose (no CUDA, NumPy or PyTorch types) so that every front door can build one.
#pragma once

#include <cstdint>
#include <type_traits>

namespace flashsinkhorn {

enum class dtype : std::uint8_t { float32, float64 };

enum class memory_space : std::uint8_t { host, cuda };

[[nodiscard]] constexpr std::int64_t size_of(dtype type) noexcept {
  return type == dtype::float32 ? 4 : 8;
}

// A rows × cols matrix, row-major: element (r, c) lives at data + r*row_stride + c (in elements).
// `Void` is `const void` for inputs and `void` for outputs.
template <class Void>
struct basic_matrix_view {
  Void* data = nullptr;
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  std::int64_t row_stride = 0;  // elements between consecutive rows; >= cols
  dtype type = dtype::float32;
  memory_space space = memory_space::host;
  int device = 0;  // CUDA ordinal when space == cuda

  [[nodiscard]] bool empty() const noexcept { return data == nullptr; }

  // A mutable view converts to a read-only one.
  template <class V = Void, class = std::enable_if_t<!std::is_const_v<V>>>
  operator basic_matrix_view<const void>() const noexcept {  // NOLINT(google-explicit-constructor)
    return {data, rows, cols, row_stride, type, space, device};
  }
};

// A vector of `size` elements: element i lives at data + i*stride (in elements).
template <class Void>
struct basic_vector_view {
  Void* data = nullptr;
  std::int64_t size = 0;
  std::int64_t stride = 1;
  dtype type = dtype::float32;
  memory_space space = memory_space::host;
  int device = 0;

  [[nodiscard]] bool empty() const noexcept { return data == nullptr; }

  template <class V = Void, class = std::enable_if_t<!std::is_const_v<V>>>
  operator basic_vector_view<const void>() const noexcept {  // NOLINT(google-explicit-constructor)
    return {data, size, stride, type, space, device};
  }
};

using matrix_view = basic_matrix_view<const void>;
using mutable_matrix_view = basic_matrix_view<void>;
using vector_view = basic_vector_view<const void>;
using mutable_vector_view = basic_vector_view<void>;

template <class T>
constexpr dtype dtype_of() noexcept {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "float or double");
  return sizeof(T) == 4 ? dtype::float32 : dtype::float64;
}

// Contiguous host matrix/vector helpers: host_matrix(ptr, rows, cols), host_vector(ptr, size).
template <class T>
[[nodiscard]] basic_matrix_view<std::conditional_t<std::is_const_v<T>, const void, void>>
host_matrix(T* data, std::int64_t rows, std::int64_t cols) noexcept {
  return {data, rows, cols, cols, dtype_of<std::remove_const_t<T>>(), memory_space::host, 0};
}

template <class T>
[[nodiscard]] basic_vector_view<std::conditional_t<std::is_const_v<T>, const void, void>>
host_vector(T* data, std::int64_t size) noexcept {
  return {data, size, 1, dtype_of<std::remove_const_t<T>>(), memory_space::host, 0};
}

}  // namespace flashsinkhorn
