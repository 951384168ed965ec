// A prepared cloud as the CUDA backend holds it (prepared_cloud.hpp, on the device): the points in
// the storage type of the precision mode, (padded_count, padded_dim) with zero padding, their scaled
// squared norms from the stored values, the weights and log-weights, and the points before rounding
// for the point gradient. Built from a host prepared_cloud (cuda_backend.cu, upload_cloud) or from
// the caller's CUDA arrays (device_prepare.hpp).
#pragma once

#include <cstdint>

#include "cuda/device_buffer.hpp"
#include "cuda/softmin_launch.hpp"

namespace flashsinkhorn::detail {

// The prepared points before rounding, for the point gradient (backend.hpp): the stored points
// themselves in fp64 and fp32, a float copy (count, dim) in tf32 and bf16.
struct exact_points_view {
  const void* data = nullptr;
  std::int64_t stride = 0;  // elements between rows
  bool is_double = false;
};

struct device_cloud {
  device_buffer<unsigned char> points;
  device_buffer<unsigned char> key_points;  // η⊙points, only when the cloud has negative_dim > 0
  device_buffer<float> exact_points;        // tf32, bf16 only
  device_buffer<double> scaled_sq_norm;
  device_buffer<double> weights;
  device_buffer<double> log_weights;
  device_cloud_view row_view;  // points in the rows' role: p
  device_cloud_view key_view;  // in the keys' role: η⊙q (== row_view without negative coordinates)
  exact_points_view exact;     // p before rounding (the features are the same in both roles)

  // The two views over this cloud's buffers (key_view on key_points when it has them).
  void make_views(std::int64_t count, std::int64_t padded_count, std::int64_t dim, std::int64_t padded_dim) {
    row_view.points = points.data();
    row_view.scaled_sq_norm = scaled_sq_norm.data();
    row_view.weights = weights.data();
    row_view.log_weights = log_weights.data();
    row_view.count = count;
    row_view.padded_count = padded_count;
    row_view.dim = dim;
    row_view.padded_dim = padded_dim;
    key_view = row_view;
    if (key_points.size() > 0) key_view.points = key_points.data();
  }
};

}  // namespace flashsinkhorn::detail
