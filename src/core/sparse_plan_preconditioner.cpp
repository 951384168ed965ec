#include "core/sparse_plan_preconditioner.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <utility>

#include "core/projected_cg.hpp"
#include "core/sparse_plan_top_entries.hpp"
#include "flashsinkhorn/error.hpp"

namespace flashsinkhorn::detail {

// W (n × k) with its keys, the transpose by columns, and S_k's diagonal parts.
struct sparse_plan_preconditioner::parts {
  std::int64_t n = 0, m = 0;
  int k = 0;
  std::vector<std::int64_t> keys;            // (n, k): j_iu, or −1
  std::vector<double> weights;               // (n, k): √a_i·s_iu
  std::vector<std::int64_t> column_offsets;  // (m + 1)
  // The entries by column, ascending entry id e = i·k + u within a column: their row i and weight
  // (held apart from `weights` so that the products read them in order, without a division).
  std::vector<std::int64_t> column_rows;
  std::vector<double> column_weights;
  std::vector<double> diagonal;              // d = c (+ shift)
  std::vector<double> jacobi;                // diag(S_k)
};

sparse_plan_preconditioner::sparse_plan_preconditioner(const solved_plan& plan, const prepared_problem& problem,
                                                       const std::vector<double>& a, const std::vector<double>& c,
                                                       bool exact, int k)
    : parts_(std::make_unique<parts>()), exact_(exact) {
  const std::int64_t n = problem.x.count, m = problem.y.count;
  if (problem.x.points.size() != static_cast<std::size_t>(n * problem.x.dim) ||
      problem.y.points.size() != static_cast<std::size_t>(m * problem.y.dim))
    throw unsupported("the sparse_plan preconditioner needs the prepared points on the host");
  const std::vector<std::pair<std::int64_t, double>> top =
      plan_top_entries(problem, plan.key_potential(), plan.eps(), k);  // (n, k) (j, s_ij)
  parts& p = *parts_;
  p.n = n;
  p.m = m;
  p.k = k;
  p.keys.resize(top.size());
  p.weights.resize(top.size());
  p.column_offsets.assign(static_cast<std::size_t>(m + 1), 0);
  for (std::size_t e = 0; e < top.size(); ++e) {
    const std::int64_t j = top[e].first;
    p.keys[e] = j;
    p.weights[e] = j >= 0 ? std::sqrt(a[e / static_cast<std::size_t>(k)]) * top[e].second : 0.0;
    if (j >= 0) ++p.column_offsets[static_cast<std::size_t>(j + 1)];
  }
  std::partial_sum(p.column_offsets.begin(), p.column_offsets.end(), p.column_offsets.begin());
  p.column_rows.resize(static_cast<std::size_t>(p.column_offsets.back()));
  p.column_weights.resize(p.column_rows.size());
  std::vector<std::int64_t> next(p.column_offsets.begin(), p.column_offsets.end() - 1);
  for (std::size_t e = 0; e < top.size(); ++e) {  // ascending e: a stable counting sort by key
    if (p.keys[e] < 0) continue;
    const auto slot = static_cast<std::size_t>(next[static_cast<std::size_t>(p.keys[e])]++);
    p.column_rows[slot] = static_cast<std::int64_t>(e / static_cast<std::size_t>(k));
    p.column_weights[slot] = p.weights[e];
  }
  const double shift = sparse_plan_shift(c, exact);
  std::vector<double> row_sums(static_cast<std::size_t>(n), 0.0);  // W·1
  for (std::int64_t e = 0; e < n * k; ++e) row_sums[e / k] += p.weights[e];
  p.diagonal.resize(static_cast<std::size_t>(m));
  p.jacobi.resize(static_cast<std::size_t>(m));
  for (std::int64_t j = 0; j < m; ++j) {
    double squares = 0, coupling = 0;  // (WᵀW)_jj and (WᵀW·1)_j
    for (std::int64_t e = p.column_offsets[j]; e < p.column_offsets[j + 1]; ++e) {
      const double w = p.column_weights[e];
      squares += w * w;
      coupling += w * row_sums[p.column_rows[e]];
    }
    p.diagonal[j] = sparse_plan_diagonal(c[j], coupling, shift);
    p.jacobi[j] = p.diagonal[j] - squares;
  }
}

sparse_plan_preconditioner::~sparse_plan_preconditioner() = default;

std::vector<double> sparse_plan_preconditioner::apply(const std::vector<double>& v) const {
  const parts& p = *parts_;
  std::vector<double> t(static_cast<std::size_t>(p.n));  // W·v, each row's entries in order
  for (std::int64_t i = 0; i < p.n; ++i) {
    double row = 0;
    for (std::int64_t e = i * p.k; e < (i + 1) * p.k; ++e)
      if (p.keys[e] >= 0) row += p.weights[e] * v[p.keys[e]];
    t[i] = row;
  }
  std::vector<double> out(static_cast<std::size_t>(p.m));
  for (std::int64_t j = 0; j < p.m; ++j) {
    double wt = 0;  // (Wᵀ·t)_j
    for (std::int64_t e = p.column_offsets[j]; e < p.column_offsets[j + 1]; ++e)
      wt += p.column_weights[e] * t[p.column_rows[e]];
    out[j] = p.diagonal[j] * v[j] - wt;
  }
  return out;
}

std::vector<double> sparse_plan_preconditioner::solve(const std::vector<double>& r) const {
  const linear_map s_k = [this](const std::vector<double>& v) { return apply(v); };
  std::vector<double> out =
      projected_cg(s_k, r, parts_->jacobi, {kSparsePlanInnerTolerance, kSparsePlanInnerIterations, /*project=*/false})
          .solution;
  if (exact_) project_out_mean(out);
  return out;
}

}  // namespace flashsinkhorn::detail
