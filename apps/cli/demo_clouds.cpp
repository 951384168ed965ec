#include "demo_clouds.hpp"

#include <array>
#include <cmath>
#include <numbers>
#include <random>

namespace flashsinkhorn::cli {

point_cloud sample_blobs(std::int64_t rows, std::uint64_t seed) {
  constexpr std::array<std::array<double, kDemoDims>, 3> kCentres = {{
      {-0.8, -0.4, 0.3},
      {0.7, -0.6, -0.2},
      {0.1, 0.9, 0.0},
  }};
  constexpr double kSpread = 0.15;
  std::mt19937_64 generator(seed);
  std::normal_distribution<double> normal(0.0, kSpread);
  point_cloud cloud{std::vector<double>(static_cast<std::size_t>(rows * kDemoDims)), rows, kDemoDims};
  for (std::int64_t i = 0; i < rows; ++i) {
    const auto& centre = kCentres[static_cast<std::size_t>(i % 3)];
    for (std::int64_t k = 0; k < kDemoDims; ++k) {
      cloud.points[static_cast<std::size_t>(i * kDemoDims + k)] = centre[static_cast<std::size_t>(k)] + normal(generator);
    }
  }
  return cloud;
}

point_cloud sample_ring(std::int64_t rows, std::uint64_t seed) {
  constexpr double kRadius = 1.0;
  constexpr double kNoise = 0.05;
  std::mt19937_64 generator(seed);
  std::uniform_real_distribution<double> angle(0.0, 2 * std::numbers::pi);
  std::normal_distribution<double> noise(0.0, kNoise);
  point_cloud cloud{std::vector<double>(static_cast<std::size_t>(rows * kDemoDims)), rows, kDemoDims};
  for (std::int64_t i = 0; i < rows; ++i) {
    const double theta = angle(generator);
    const double radius = kRadius + noise(generator);
    double* point = cloud.points.data() + i * kDemoDims;
    point[0] = radius * std::cos(theta);
    point[1] = radius * std::sin(theta);
    point[2] = noise(generator);
  }
  return cloud;
}

}  // namespace flashsinkhorn::cli
