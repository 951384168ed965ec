// Label-cost test problems: labelled clouds, the two kinds of label distance matrix W, and the
// problem that points at them. The data must outlive the problem (views).
#pragma once

#include <random>
#include <vector>

#include "test_problems.hpp"

namespace testing_support {

// W[l, l'] = ‖e_l − e_l'‖² for L random points e_l ∈ R³: a squared Euclidean distance matrix, so
// −½JWJ is PSD (rank ≤ 3).
inline reference::label_matrix euclidean_label_matrix(std::int64_t label_count, std::uint64_t seed) {
  const reference::cloud centres = reference::random_cloud(label_count, 3, seed);
  reference::label_matrix w;
  w.count = label_count;
  w.distances.resize(static_cast<std::size_t>(label_count * label_count));
  for (std::int64_t l = 0; l < label_count; ++l) {
    for (std::int64_t k = 0; k < label_count; ++k) w.distances[l * label_count + k] = reference::sq_dist(centres, l, centres, k);
  }
  return w;
}

// A random symmetric, zero-diagonal, non-negative W (entries U[0.5, 3)) whose first three labels
// break the triangle inequality of √W: W01 = 9, W02 = W12 = ½ (3 > √½ + √½). Then W is no squared
// Euclidean distance matrix and −½JWJ has a negative eigenvalue; non_psd_certificate shows it.
inline reference::label_matrix non_euclidean_label_matrix(std::int64_t label_count, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> entry(0.5, 3.0);
  reference::label_matrix w;
  w.count = label_count;
  w.distances.assign(static_cast<std::size_t>(label_count * label_count), 0.0);
  const auto set = [&](std::int64_t l, std::int64_t k, double v) {
    w.distances[l * label_count + k] = v;
    w.distances[k * label_count + l] = v;
  };
  for (std::int64_t l = 0; l < label_count; ++l) {
    for (std::int64_t k = l + 1; k < label_count; ++k) set(l, k, entry(rng));
  }
  set(0, 1, 9.0);
  set(0, 2, 0.5);
  set(1, 2, 0.5);
  return w;
}

// vᵀ(−½JWJ)v for the centred v = e0 + e1 − 2e2 (Jv = v, so it is −½vᵀWv): negative means −½JWJ is
// not PSD — a certificate independent of any eigensolver.
inline double non_psd_certificate(const reference::label_matrix& w) {
  const std::int64_t count = w.count;
  const double v[3] = {1.0, 1.0, -2.0};
  double quadratic = 0;
  for (std::int64_t l = 0; l < 3; ++l) {
    for (std::int64_t k = 0; k < 3; ++k) quadratic += v[l] * v[k] * w.distances[l * count + k];
  }
  return -0.5 * quadratic;
}

// Random labels in [0, L) on a cloud.
inline void assign_labels(reference::cloud& c, std::int64_t label_count, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::int32_t> label(0, static_cast<std::int32_t>(label_count - 1));
  c.labels.resize(static_cast<std::size_t>(c.count));
  for (auto& l : c.labels) l = label(rng);
}

// make_problem with the label cost of `w` on x.labels, y.labels.
inline flashsinkhorn::problem make_labelled_problem(const reference::cloud& x, const reference::cloud& y,
                                                    const reference::label_matrix& w, double eps, double cost_scale) {
  flashsinkhorn::problem p = make_problem(x, y, eps, cost_scale);
  p.labels.x_labels = flashsinkhorn::host_labels(x.labels.data(), x.count);
  p.labels.y_labels = flashsinkhorn::host_labels(y.labels.data(), y.count);
  p.labels.label_distances = flashsinkhorn::host_matrix(w.distances.data(), w.count, w.count);
  p.labels.feature_weight = w.feature_weight;
  p.labels.label_weight = w.label_weight;
  return p;
}

}  // namespace testing_support
