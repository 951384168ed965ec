// Helpers shared by the GPU tests.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "core/prepared_cloud.hpp"

namespace flashsinkhorn::detail::gpu_tests {

// s·(max‖p‖ + max‖q‖)²: the largest cost of the (centred) problem, the scale of its potentials and
// so of their absolute error bounds.
inline double largest_cost(const prepared_problem& p) {
  const auto max_norm = [](const prepared_cloud& c) {
    double best = 0;
    for (std::int64_t i = 0; i < c.count; ++i) {
      double s = 0;
      for (std::int64_t k = 0; k < c.dim; ++k) s += c.points[i * c.dim + k] * c.points[i * c.dim + k];
      best = std::max(best, std::sqrt(s));
    }
    return best;
  };
  const double reach = max_norm(p.x) + max_norm(p.y);
  return p.cost_scale * reach * reach;
}

}  // namespace flashsinkhorn::detail::gpu_tests
