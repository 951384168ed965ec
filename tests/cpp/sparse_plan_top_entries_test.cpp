// The sparse preconditioner's top-entries scan (core/sparse_plan_top_entries.hpp) against the
// definition, s_ij = softmax_j((g_j − s·Σ_c η_c (p_ic − q_jc)²)/ε + log b_j), computed pair by pair:
// the k largest entries of each row in order, their shares, and (−1, 0) past m. Key counts that
// leave a partial panel of 8 keys, rows with label coordinates (η = −1), and k > m.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "core/sparse_plan_top_entries.hpp"

namespace {

using flashsinkhorn::detail::plan_top_entries;
using flashsinkhorn::detail::prepared_cloud;
using flashsinkhorn::detail::prepared_problem;

prepared_cloud cloud(std::int64_t count, std::int64_t dim, std::int64_t negative_dim, std::mt19937_64& rng) {
  std::normal_distribution<double> normal;
  std::uniform_real_distribution<double> uniform(0.5, 1.5);
  prepared_cloud c;
  c.count = count;
  c.dim = dim;
  c.negative_dim = negative_dim;
  for (std::int64_t e = 0; e < count * dim; ++e) c.points.push_back(normal(rng));
  double total = 0;
  for (std::int64_t j = 0; j < count; ++j) total += c.weights.emplace_back(uniform(rng));
  for (double& w : c.weights) c.log_weights.push_back(std::log(w /= total));
  return c;
}

// Row i's entries by the definition: all m shares, the k largest in order.
std::vector<std::pair<std::int64_t, double>> reference_row(const prepared_problem& problem, const std::vector<double>& g,
                                                           double eps, std::int64_t i, int k) {
  const prepared_cloud& x = problem.x;
  const prepared_cloud& y = problem.y;
  std::vector<double> t(static_cast<std::size_t>(y.count));
  for (std::int64_t j = 0; j < y.count; ++j) {
    double sq = 0;
    for (std::int64_t c = 0; c < x.dim; ++c) {
      const double diff = x.points[i * x.dim + c] - y.points[j * y.dim + c];
      sq += (c < x.dim - x.negative_dim ? 1.0 : -1.0) * diff * diff;
    }
    t[j] = (g[j] - problem.cost_scale * sq) / eps + y.log_weights[j];
  }
  const double top = *std::max_element(t.begin(), t.end());
  double sum = 0;
  for (const double v : t) sum += std::exp(v - top);
  std::vector<std::pair<std::int64_t, double>> all;
  for (std::int64_t j = 0; j < y.count; ++j) all.emplace_back(j, std::exp(t[j] - top) / sum);
  std::stable_sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  all.resize(static_cast<std::size_t>(k), {-1, 0.0});
  return all;
}

void expect_matches_the_definition(std::int64_t n, std::int64_t m, std::int64_t dim, std::int64_t negative_dim, int k,
                                   std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  prepared_problem problem;
  problem.x = cloud(n, dim, negative_dim, rng);
  problem.y = cloud(m, dim, negative_dim, rng);
  problem.cost_scale = 0.7;
  const double eps = 0.4;
  std::normal_distribution<double> normal;
  std::vector<double> g(static_cast<std::size_t>(m));
  for (double& v : g) v = 0.3 * normal(rng);
  const std::vector<std::pair<std::int64_t, double>> got = plan_top_entries(problem, g, eps, k);
  ASSERT_EQ(got.size(), static_cast<std::size_t>(n * k));
  for (std::int64_t i = 0; i < n; ++i) {
    const std::vector<std::pair<std::int64_t, double>> want = reference_row(problem, g, eps, i, k);
    for (int u = 0; u < k; ++u) {
      const auto& entry = got[static_cast<std::size_t>(i * k + u)];
      SCOPED_TRACE(::testing::Message() << "row " << i << ", entry " << u);
      EXPECT_EQ(entry.first, want[static_cast<std::size_t>(u)].first);
      EXPECT_NEAR(entry.second, want[static_cast<std::size_t>(u)].second, 1e-13);
    }
  }
}

TEST(SparsePlanTopEntries, MatchTheDefinitionWithAPartialPanel) { expect_matches_the_definition(23, 37, 5, 0, 8, 11); }

TEST(SparsePlanTopEntries, MatchTheDefinitionWithLabelCoordinates) { expect_matches_the_definition(19, 29, 6, 2, 8, 12); }

TEST(SparsePlanTopEntries, PadPastTheKeys) { expect_matches_the_definition(5, 6, 3, 0, 8, 13); }

}  // namespace
