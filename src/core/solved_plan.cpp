#include "core/solved_plan.hpp"

#include <cmath>

#include "math/point_gradient.hpp"

#include "core/parallel_rows.hpp"
#include "core/plan_quadratic_generic.hpp"

namespace flashsinkhorn::detail {

solved_plan::solved_plan(const backend& compute, const prepared_problem& problem, double eps)
    : compute_(compute), problem_(problem), eps_(eps), g_(compute.read_potential(slot::g)) {
  // f̃ = T_f(g) = −ε·lse_i, so (f̃_i − f_i)/ε = −lse_i − f_i/ε.
  const plan_rows_result rows = compute_.plan_rows(plan_pass_request(side::x, slot::g, eps_, nullptr, 0));
  ++passes_;
  const std::vector<double> f = compute_.read_potential(slot::f);
  key_reweight_.resize(f.size());
  for (std::size_t i = 0; i < f.size(); ++i) key_reweight_[i] = std::exp(-rows.lse[i] - f[i] / eps_);
  // The y-rows pass's LSE does not depend on its values: the column masses are fixed here, and
  // c = Pᵀ1 comes from the same pass.
  plan_rows_result columns =
      compute_.plan_rows(plan_pass_request(side::y, slot::f, eps_, key_reweight_.data(), 1));
  ++passes_;
  const std::vector<double>& b = problem_.y.weights;
  column_masses_.resize(b.size());
  for (std::size_t j = 0; j < b.size(); ++j) column_masses_[j] = math::plan_row_mass(b[j], true, g_[j], eps_, columns.lse[j]);
  column_mass_ = column_masses_times(std::move(columns), 1);
}

schur_system solved_plan::schur() const {
  schur_system system;
  system.eps = eps_;
  system.key_reweight = &key_reweight_;
  system.column_masses = &column_masses_;
  system.column_sums = &column_mass_;
  return system;
}

std::vector<double> solved_plan::row_average(const std::vector<double>& values, std::int64_t k) const {
  plan_rows_result pass = compute_.plan_rows(plan_pass_request(side::x, slot::g, eps_, values.data(), k));
  ++passes_;
  return std::move(pass.weighted);
}

std::vector<double> solved_plan::apply_transpose(const std::vector<double>& values, std::int64_t k) const {
  const std::vector<double> reweighted = reweight_keys(values, k);
  plan_rows_result pass = compute_.plan_rows(plan_pass_request(side::y, slot::f, eps_, reweighted.data(), k));
  ++passes_;
  return column_masses_times(std::move(pass), k);
}

std::vector<double> solved_plan::reweight_keys(const std::vector<double>& values, std::int64_t k) const {
  std::vector<double> reweighted(values.size());
  parallel_rows(static_cast<std::int64_t>(key_reweight_.size()), k, [&](std::int64_t i) {
    for (std::int64_t c = 0; c < k; ++c) reweighted[i * k + c] = values[i * k + c] * key_reweight_[i];
  });
  return reweighted;
}

std::vector<double> solved_plan::column_masses_times(plan_rows_result pass, std::int64_t k) const {
  parallel_rows(static_cast<std::int64_t>(column_masses_.size()), k, [&](std::int64_t j) {
    for (std::int64_t c = 0; c < k; ++c) pass.weighted[j * k + c] *= column_masses_[j];
  });
  return std::move(pass.weighted);
}

plan_rows_result solved_plan::quadratic_pass(side rows, slot key, const std::vector<double>& directions,
                                             const std::vector<double>& values, std::int64_t k, two_gemm_path path,
                                             const double* key_directions) const {
  plan_quadratic_request request;
  request.rows = rows;
  request.keys = other(rows);
  request.key_potential = key;
  request.eps = eps_;
  request.directions = directions.data();
  request.values = values.data();
  request.k = k;
  request.key_directions = key_directions;
  ++passes_;
  const bool fusable = key_directions == nullptr || compute_.supports_key_directions();
  if (path == two_gemm_path::fused && fusable) return compute_.plan_quadratic_rows(request);
  const prepared_cloud& row_cloud = rows == side::x ? problem_.x : problem_.y;
  const prepared_cloud& key_cloud = rows == side::x ? problem_.y : problem_.x;
  return plan_quadratic_rows_by_plan_pass(compute_, request, key_cloud.key_role_points(), key_cloud.dim,
                                          row_cloud.count);
}

void solved_plan::row_average(matrix_store& store, int values, int out) const {
  store.plan_rows(plan_pass_request(side::x, slot::g, eps_, nullptr, 0), values, out);
  ++passes_;
}

void solved_plan::apply_transpose(matrix_store& store, int values, int out, int scratch) const {
  const std::int64_t k = store.cols(values);
  store.write(scratch, {}, store.rows(values), k);
  store.combine(scratch, 0, k, false, {{values, 0, &key_reweight_, 1.0}});
  store.plan_rows(plan_pass_request(side::y, slot::f, eps_, nullptr, 0), scratch, out);
  ++passes_;
  store.combine(out, 0, k, false, {{out, 0, &column_masses_, 1.0}});
}

void solved_plan::quadratic_pass(matrix_store& store, side rows, slot key, int directions, int values,
                                 int key_directions, int out, two_gemm_path path) const {
  plan_quadratic_request request;
  request.rows = rows;
  request.keys = other(rows);
  request.key_potential = key;
  request.eps = eps_;
  const bool fusable = key_directions < 0 || compute_.supports_key_directions();
  if (path == two_gemm_path::fused && fusable) {
    store.plan_quadratic_rows(request, directions, values, key_directions, out);
    ++passes_;
    return;
  }
  const std::vector<double> u = store.read(directions), v = store.read(values);
  const std::vector<double> z = key_directions >= 0 ? store.read(key_directions) : std::vector<double>();
  request.directions = u.data();
  request.values = v.data();
  request.k = store.cols(values);
  request.key_directions = key_directions >= 0 ? z.data() : nullptr;
  const plan_rows_result result = quadratic_pass(rows, key, u, v, request.k, path, request.key_directions);
  store.write(out, result.weighted, store.rows(directions), request.k);
}

void solved_plan::quadratic_row_average(matrix_store& store, int directions, int values, int key_directions,
                                        int out, two_gemm_path path) const {
  quadratic_pass(store, side::x, slot::g, directions, values, key_directions, out, path);
}

void solved_plan::quadratic_transpose(matrix_store& store, int directions, int values, int key_directions, int out,
                                      int scratch, two_gemm_path path) const {
  // The reweighting w_i scales each term once: through V, never through z.
  const std::int64_t k = store.cols(values);
  store.write(scratch, {}, store.rows(values), k);
  store.combine(scratch, 0, k, false, {{values, 0, &key_reweight_, 1.0}});
  quadratic_pass(store, side::y, slot::f, directions, scratch, key_directions, out, path);
  store.combine(out, 0, k, false, {{out, 0, &column_masses_, 1.0}});
}

}  // namespace flashsinkhorn::detail
