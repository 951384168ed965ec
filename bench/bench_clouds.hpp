// Inputs of the GPU benchmark programs, as the backend takes them (prepared_cloud): points
// x ~ N(0, I_d) and weights either uniform or the authors' protocol, U[0,1) + 0.1 normalised.
// Points are drawn before weights from the caller's generator. Header-only.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>

#include "core/prepared_cloud.hpp"

namespace flashsinkhorn::bench {

enum class cloud_weights { uniform, protocol };

inline detail::prepared_cloud normal_cloud(std::int64_t n, std::int64_t d, cloud_weights weights,
                                           std::mt19937_64& rng) {
  detail::prepared_cloud c;
  c.count = n;
  c.dim = d;
  std::normal_distribution<double> normal(0.0, 1.0);
  c.points.resize(static_cast<std::size_t>(n * d));
  for (auto& v : c.points) v = normal(rng);
  if (weights == cloud_weights::uniform) {
    c.weights.assign(static_cast<std::size_t>(n), 1.0 / static_cast<double>(n));
    c.log_weights.assign(static_cast<std::size_t>(n), -std::log(static_cast<double>(n)));
    return c;
  }
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  c.weights.resize(static_cast<std::size_t>(n));
  double total = 0;
  for (auto& w : c.weights) total += (w = uniform(rng) + 0.1);
  c.log_weights.resize(c.weights.size());
  for (std::size_t i = 0; i < c.weights.size(); ++i) {
    c.weights[i] /= total;
    c.log_weights[i] = std::log(c.weights[i]);
  }
  return c;
}

}  // namespace flashsinkhorn::bench
