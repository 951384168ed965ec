// Clouds for tests that call the device passes directly: random points on the host, uploaded as
// the backend stores a cloud (device_cloud_view) with points of type Point (float: the fp32 mode's,
// double: the fp64 mode's).
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "cuda/device_buffer.hpp"
#include "cuda/softmin_launch.hpp"
#include "cuda/tile_config.hpp"

namespace flashsinkhorn::detail::stored_cloud {

// Points (count, dim) row-major, N(shift, 1) rounded to Point; s·‖p_i‖² from the rounded points;
// weights U[0,1) + 0.1 with every seventh 0, normalised.
template <class Point>
struct host_cloud {
  std::int64_t count = 0, dim = 0;
  std::vector<Point> points;
  std::vector<double> scaled_sq_norm, weights, log_weights;
};

template <class Point>
host_cloud<Point> random_cloud(std::int64_t count, std::int64_t dim, double shift, double cost_scale,
                               std::mt19937_64& rng) {
  host_cloud<Point> c;
  c.count = count;
  c.dim = dim;
  std::normal_distribution<double> normal(shift, 1.0);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  c.points.resize(static_cast<std::size_t>(count * dim));
  for (Point& v : c.points) v = static_cast<Point>(normal(rng));
  for (std::int64_t i = 0; i < count; ++i) {
    double sq = 0;
    for (std::int64_t k = 0; k < dim; ++k) sq += double{c.points[i * dim + k]} * c.points[i * dim + k];
    c.scaled_sq_norm.push_back(cost_scale * sq);
    c.weights.push_back(i % 7 == 3 ? 0.0 : uniform(rng) + 0.1);
  }
  const double total = std::accumulate(c.weights.begin(), c.weights.end(), 0.0);
  for (double& w : c.weights) {
    w /= total;
    c.log_weights.push_back(w > 0 ? std::log(w) : -std::numeric_limits<double>::infinity());
  }
  return c;
}

// (on the legacy default stream, as every call of these tests)
template <class T>
device_buffer<T> upload(const std::vector<T>& values) {
  device_buffer<T> buffer(values.size(), nullptr);
  EXPECT_EQ(cudaMemcpy(buffer.data(), values.data(), values.size() * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
  return buffer;
}

template <class T>
std::vector<T> download(const device_buffer<T>& buffer) {
  std::vector<T> values(buffer.size());
  EXPECT_EQ(cudaMemcpy(values.data(), buffer.data(), buffer.bytes(), cudaMemcpyDeviceToHost), cudaSuccess);
  return values;
}

// The points as the backend stores them: (padded_count, padded_dim) with zeros in the padding, rows
// to a multiple of tile::kRowPadding and the stride to one of tile::kRowWordMultiple, for the passes
// (the narrow LSE pass among them) read whole key tiles.
template <class Point>
std::vector<Point> padded_points(const host_cloud<Point>& c, std::int64_t padded_count, std::int64_t padded_dim) {
  std::vector<Point> padded(static_cast<std::size_t>(padded_count * padded_dim), Point{0});
  for (std::int64_t i = 0; i < c.count; ++i)
    std::copy_n(c.points.begin() + i * c.dim, c.dim, padded.begin() + i * padded_dim);
  return padded;
}

template <class Point>
struct uploaded_cloud {
  device_buffer<Point> points;
  device_buffer<double> scaled_sq_norm, weights, log_weights;
  device_cloud_view view;
  explicit uploaded_cloud(const host_cloud<Point>& c)
      : points(upload(padded_points(c, tile::round_up(c.count, tile::kRowPadding),
                                    tile::round_up(c.dim, tile::kRowWordMultiple)))),
        scaled_sq_norm(upload(c.scaled_sq_norm)),
        weights(upload(c.weights)),
        log_weights(upload(c.log_weights)) {
    view.points = points.data();
    view.scaled_sq_norm = scaled_sq_norm.data();
    view.weights = weights.data();
    view.log_weights = log_weights.data();
    view.count = c.count;
    view.padded_count = tile::round_up(c.count, tile::kRowPadding);
    view.dim = c.dim;
    view.padded_dim = tile::round_up(c.dim, tile::kRowWordMultiple);
  }
};

}  // namespace flashsinkhorn::detail::stored_cloud
