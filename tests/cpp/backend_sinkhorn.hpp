// Alternating Sinkhorn run directly on a backend (f ← T(g), g ← T(f), from g = 0): a solved
// state for tests of what comes after the solve (solved_plan, the potential system) without the
// solver's options and stopping rule. And the prepared clouds such tests start from.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>

#include "core/backend.hpp"
#include "core/prepared_cloud.hpp"

namespace testing_support {

// `count` N(shift, 1) points of `dim` features and U[0.5, 1.5) weights, normalised (not centred).
inline flashsinkhorn::detail::prepared_cloud random_prepared_cloud(std::int64_t count, std::int64_t dim, double shift,
                                                                   std::mt19937_64& rng) {
  flashsinkhorn::detail::prepared_cloud c;
  c.count = count;
  c.dim = dim;
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_real_distribution<double> uniform(0.5, 1.5);
  c.points.resize(static_cast<std::size_t>(count * dim));
  for (double& v : c.points) v = normal(rng) + shift;
  c.weights.resize(static_cast<std::size_t>(count));
  double total = 0;
  for (double& w : c.weights) total += (w = uniform(rng));
  for (double& w : c.weights) w /= total;
  for (double w : c.weights) c.log_weights.push_back(std::log(w));
  return c;
}

inline void alternate_sinkhorn(flashsinkhorn::detail::backend& compute, double eps, int iterations) {
  using namespace flashsinkhorn::detail;
  compute.write_potential(slot::g, {});
  softmin_step to_f;
  to_f.key_potential = slot::g;
  to_f.out = slot::f;
  to_f.eps = eps;
  softmin_step to_g = to_f;
  to_g.rows = side::y;
  to_g.keys = side::x;
  to_g.key_potential = slot::f;
  to_g.out = slot::g;
  for (int it = 0; it < iterations; ++it) {
    compute.softmin(to_f);
    compute.softmin(to_g);
  }
}

}  // namespace testing_support
