#include "core/sparse_plan_preconditioner.hpp"

#include <Eigen/Sparse>
#include <Eigen/SparseCholesky>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>

#include "core/projected_cg.hpp"
#include "flashsinkhorn/error.hpp"

namespace flashsinkhorn::detail {
namespace {

// Row i's k largest softmax entries: (key index, s_ij), s_i = softmax_j((g_j − C_ij)/ε + log b_j).
void top_entries(const prepared_problem& problem, const std::vector<double>& g, double eps, std::int64_t i, int k,
                 std::vector<std::pair<double, std::int64_t>>& scores, std::pair<std::int64_t, double>* out) {
  const prepared_cloud& x = problem.x;
  const prepared_cloud& y = problem.y;
  const std::int64_t d = x.dim;
  const std::int64_t euclidean = d - x.negative_dim;  // the trailing negative_dim coordinates have η = −1
  const double* p = x.points.data() + i * d;
  double top = -std::numeric_limits<double>::infinity();
  for (std::int64_t j = 0; j < y.count; ++j) {
    double sq = 0;  // Σ_c η_c (p_c − q_c)²: C_ij/s, label embeddings included (prepared_cloud.hpp)
    for (std::int64_t c = 0; c < d; ++c) {
      const double diff = p[c] - y.points[j * d + c];
      sq += c < euclidean ? diff * diff : -diff * diff;
    }
    const double t = (g[j] - problem.cost_scale * sq) / eps + y.log_weights[j];
    scores[j] = {t, j};
    top = std::max(top, t);
  }
  double sum = 0;
  for (const auto& s : scores) sum += std::exp(s.first - top);
  const double lse = top + std::log(sum);
  const auto kept = std::min<std::int64_t>(k, y.count);
  std::partial_sort(scores.begin(), scores.begin() + kept, scores.end(),
                    [](const auto& u, const auto& v) { return u.first > v.first; });
  for (std::int64_t e = 0; e < kept; ++e) out[e] = {scores[e].second, std::exp(scores[e].first - lse)};
  for (std::int64_t e = kept; e < k; ++e) out[e] = {-1, 0.0};
}

}  // namespace

struct sparse_plan_preconditioner::factor {
  Eigen::SimplicialLDLT<Eigen::SparseMatrix<double>> ldlt;
};

sparse_plan_preconditioner::sparse_plan_preconditioner(const solved_plan& plan, const prepared_problem& problem,
                                                       const std::vector<double>& a, const std::vector<double>& c,
                                                       bool exact, int k)
    : factor_(std::make_unique<factor>()), exact_(exact) {
  const std::int64_t n = problem.x.count, m = problem.y.count;
  if (problem.x.points.size() != static_cast<std::size_t>(n * problem.x.dim) ||
      problem.y.points.size() != static_cast<std::size_t>(m * problem.y.dim))
    throw unsupported("the sparse_plan preconditioner needs the prepared points on the host");
  std::vector<std::pair<std::int64_t, double>> top(static_cast<std::size_t>(n * k));  // (n, k) (j, s_ij)
#pragma omp parallel
  {
    std::vector<std::pair<double, std::int64_t>> scores(static_cast<std::size_t>(m));
#pragma omp for schedule(static)
    for (std::int64_t i = 0; i < n; ++i)
      top_entries(problem, plan.key_potential(), plan.eps(), i, k, scores, top.data() + i * k);
  }
  // S_k = diag(c) − Σ_i a_i s_i s_iᵀ over the kept entries (duplicates summed by setFromTriplets).
  std::vector<Eigen::Triplet<double>> entries;
  entries.reserve(static_cast<std::size_t>(m + n * k * k));
  const double shift = exact ? kSparsePlanShift * *std::max_element(c.begin(), c.end()) : 0.0;
  for (std::int64_t j = 0; j < m; ++j) entries.emplace_back(j, j, c[j] + shift);
  for (std::int64_t i = 0; i < n; ++i) {
    const auto* row = top.data() + i * k;
    for (int u = 0; u < k; ++u) {
      if (row[u].first < 0) continue;
      for (int v = 0; v < k; ++v)
        if (row[v].first >= 0) entries.emplace_back(row[u].first, row[v].first, -a[i] * row[u].second * row[v].second);
    }
  }
  Eigen::SparseMatrix<double> s_k(m, m);
  s_k.setFromTriplets(entries.begin(), entries.end());
  factor_->ldlt.compute(s_k);
  if (factor_->ldlt.info() != Eigen::Success)
    throw error("the sparse_plan preconditioner could not factor S_k (use the diagonal preconditioner)");
}

sparse_plan_preconditioner::~sparse_plan_preconditioner() = default;

std::vector<double> sparse_plan_preconditioner::solve(const std::vector<double>& r) const {
  const Eigen::Map<const Eigen::VectorXd> rhs(r.data(), static_cast<Eigen::Index>(r.size()));
  const Eigen::VectorXd z = factor_->ldlt.solve(rhs);
  std::vector<double> out(z.data(), z.data() + z.size());
  if (exact_) project_out_mean(out);
  return out;
}

}  // namespace flashsinkhorn::detail
