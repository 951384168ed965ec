// The built-in point clouds of `flashsinkhorn demo`, sampled with a fixed seed (the exact values
// depend on the standard library's normal_distribution, so they differ between libstdc++ and libc++).
#pragma once

#include <cstdint>
#include <vector>

namespace flashsinkhorn::cli {

struct point_cloud {
  std::vector<double> points;  // (rows, dims), row-major
  std::int64_t rows = 0;
  std::int64_t dims = 0;
};

inline constexpr std::int64_t kDemoDims = 3;

// Source: an equal mixture of three Gaussian blobs (σ = 0.15) in d = 3.
[[nodiscard]] point_cloud sample_blobs(std::int64_t rows, std::uint64_t seed);

// Target: a noisy ring of radius 1 in the z = 0 plane (radial σ = 0.05, vertical σ = 0.05).
[[nodiscard]] point_cloud sample_ring(std::int64_t rows, std::uint64_t seed);

}  // namespace flashsinkhorn::cli
