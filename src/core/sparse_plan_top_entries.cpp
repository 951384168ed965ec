#include "core/sparse_plan_top_entries.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

// This file is compiled with -ffp-contract=off (src/CMakeLists.txt): each squared distance rounds
// as Σ_c round((p_c − q_c)²), as the scalar scan before the key panels did. The sparse CG on the
// sharpest plans is sensitive to S_k at that level: with fused multiply-adds here, the float64 redo
// of SparsePlanPreconditioner.UnconvergedFp32AdjointIsRedoneInFloat64 took 942 CG iterations
// against 261 (session 52).

namespace flashsinkhorn::detail {
namespace {

// The keys' coordinates in panels of kPanelKeys keys, key-fastest: panel b holds keys
// [b·kPanelKeys, …) as (d, kPanelKeys), zero past the last key. A row's squared distances to a
// panel's keys are then kPanelKeys independent sums that the compiler keeps in vector registers
// (one sum a pair, in coordinate order, was an FMA-latency-bound chain: the scan cost as much as
// eight plan passes at 3,000 × 64 on the VM).
constexpr int kPanelKeys = 8;
typedef double panel_vector __attribute__((vector_size(kPanelKeys * sizeof(double))));  // GCC/Clang

std::vector<double> key_panels(const prepared_cloud& y) {
  const std::int64_t d = y.dim, panels = (y.count + kPanelKeys - 1) / kPanelKeys;
  std::vector<double> out(static_cast<std::size_t>(panels * d * kPanelKeys), 0.0);
  for (std::int64_t j = 0; j < y.count; ++j)
    for (std::int64_t c = 0; c < d; ++c)
      out[static_cast<std::size_t>(((j / kPanelKeys) * d + c) * kPanelKeys + j % kPanelKeys)] = y.points[j * d + c];
  return out;
}

// Row i's k largest softmax entries: (key index, s_ij), s_i = softmax_j((g_j − C_ij)/ε + log b_j),
// C_ij/s = Σ_c η_c (p_c − q_c)² with label embeddings included (the trailing negative_dim
// coordinates have η = −1; prepared_cloud.hpp).
void top_entries(const prepared_problem& problem, const std::vector<double>& panels, const std::vector<double>& g,
                 double eps, std::int64_t i, int k, std::vector<std::pair<double, std::int64_t>>& scores,
                 std::pair<std::int64_t, double>* out) {
  const prepared_cloud& x = problem.x;
  const prepared_cloud& y = problem.y;
  const std::int64_t d = x.dim;
  const std::int64_t euclidean = d - x.negative_dim;
  const double* p = x.points.data() + i * d;
  double top = -std::numeric_limits<double>::infinity();
  for (std::int64_t j0 = 0; j0 < y.count; j0 += kPanelKeys) {
    const double* panel = panels.data() + j0 * d;  // (d, kPanelKeys)
    panel_vector sq = {};
    for (std::int64_t c = 0; c < d; ++c) {
      panel_vector q;
      std::memcpy(&q, panel + c * kPanelKeys, sizeof q);
      const panel_vector diff = p[c] - q;
      if (c < euclidean)
        sq += diff * diff;
      else
        sq -= diff * diff;
    }
    const int count = static_cast<int>(std::min<std::int64_t>(kPanelKeys, y.count - j0));
    for (int u = 0; u < count; ++u) {
      const std::int64_t j = j0 + u;
      const double t = (g[j] - problem.cost_scale * sq[u]) / eps + y.log_weights[j];
      scores[j] = {t, j};
      top = std::max(top, t);
    }
  }
  double sum = 0;
  for (const auto& s : scores)
    sum += std::exp(s.first - top);
  const double lse = top + std::log(sum);
  const auto kept = std::min<std::int64_t>(k, y.count);
  std::partial_sort(scores.begin(), scores.begin() + kept, scores.end(),
                    [](const auto& u, const auto& v) { return u.first > v.first; });
  for (std::int64_t e = 0; e < kept; ++e) out[e] = {scores[e].second, std::exp(scores[e].first - lse)};
  for (std::int64_t e = kept; e < k; ++e) out[e] = {-1, 0.0};
}

}  // namespace

std::vector<std::pair<std::int64_t, double>> plan_top_entries(const prepared_problem& problem,
                                                              const std::vector<double>& g, double eps, int k) {
  const std::int64_t n = problem.x.count, m = problem.y.count;
  std::vector<std::pair<std::int64_t, double>> top(static_cast<std::size_t>(n * k));
  const std::vector<double> panels = key_panels(problem.y);
#pragma omp parallel
  {
    std::vector<std::pair<double, std::int64_t>> scores(static_cast<std::size_t>(m));
#pragma omp for schedule(static)
    for (std::int64_t i = 0; i < n; ++i) top_entries(problem, panels, g, eps, i, k, scores, top.data() + i * k);
  }
  return top;
}

}  // namespace flashsinkhorn::detail
