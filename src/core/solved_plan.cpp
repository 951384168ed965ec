#include "core/solved_plan.hpp"

#include <cmath>

namespace flashsinkhorn::detail {
namespace {

plan_rows_request pass_over(side rows, slot key, double eps, const double* values, std::int64_t k) {
  plan_rows_request request;
  request.rows = rows;
  request.keys = other(rows);
  request.key_potential = key;
  request.eps = eps;
  request.values = values;
  request.k = k;
  return request;
}

}  // namespace

solved_plan::solved_plan(const backend& compute, const prepared_problem& problem, double eps)
    : compute_(compute), problem_(problem), eps_(eps), g_(compute.read_potential(slot::g)) {
  // f̃ = T_f(g) = −ε·lse_i, so (f̃_i − f_i)/ε = −lse_i − f_i/ε.
  const plan_rows_result rows = compute_.plan_rows(pass_over(side::x, slot::g, eps_, nullptr, 0));
  ++passes_;
  const std::vector<double> f = compute_.read_potential(slot::f);
  key_reweight_.resize(f.size());
  for (std::size_t i = 0; i < f.size(); ++i) key_reweight_[i] = std::exp(-rows.lse[i] - f[i] / eps_);
  column_mass_ = apply_transpose(std::vector<double>(f.size(), 1.0), 1);
}

std::vector<double> solved_plan::row_average(const std::vector<double>& values, std::int64_t k) const {
  plan_rows_result pass = compute_.plan_rows(pass_over(side::x, slot::g, eps_, values.data(), k));
  ++passes_;
  return std::move(pass.weighted);
}

std::vector<double> solved_plan::apply_transpose(const std::vector<double>& values, std::int64_t k) const {
  std::vector<double> reweighted(values.size());
  for (std::size_t i = 0; i < key_reweight_.size(); ++i) {
    for (std::int64_t c = 0; c < k; ++c) reweighted[i * k + c] = values[i * k + c] * key_reweight_[i];
  }
  plan_rows_result pass = compute_.plan_rows(pass_over(side::y, slot::f, eps_, reweighted.data(), k));
  ++passes_;
  const std::vector<double>& b = problem_.y.weights;
  for (std::size_t j = 0; j < b.size(); ++j) {
    const double mass = b[j] * std::exp(g_[j] / eps_ + pass.lse[j]);
    for (std::int64_t c = 0; c < k; ++c) pass.weighted[j * k + c] *= mass;
  }
  return std::move(pass.weighted);
}

}  // namespace flashsinkhorn::detail
