// The caller's arrays as the device preparation reads them (device_prepare.cu): strided float or
// double views, read as doubles, and one value per cloud for the kernels that take both clouds in
// one launch.
#pragma once

#include <cstdint>

namespace flashsinkhorn::detail {

// A (rows, cols) matrix view with a row stride, of floats or doubles.
struct matrix_source {
  const void* data;
  std::int64_t rows, cols, row_stride;
  bool is_double;
  __device__ double at(std::int64_t r, std::int64_t c) const {
    const std::int64_t k = r * row_stride + c;
    return is_double ? static_cast<const double*>(data)[k] : static_cast<double>(static_cast<const float*>(data)[k]);
  }
};

// A vector view with a stride, of floats or doubles.
struct vector_source {
  const void* data;
  std::int64_t size, stride;
  bool is_double;
  __device__ double at(std::int64_t i) const {
    const std::int64_t k = i * stride;
    return is_double ? static_cast<const double*>(data)[k] : static_cast<double>(static_cast<const float*>(data)[k]);
  }
};

// One value per cloud, [0] the X side and [1] the Y side: the kernels take both clouds in one
// launch, a grid dimension naming the side.
template <class T>
struct per_cloud {
  T side[2];
};

}  // namespace flashsinkhorn::detail
