#include "core/projected_cg.hpp"

#include <cmath>
#include <numeric>
#include <utility>

namespace flashsinkhorn::detail {
namespace {

double dot(const std::vector<double>& u, const std::vector<double>& v) {
  return std::inner_product(u.begin(), u.end(), v.begin(), 0.0);
}

std::vector<double> divided(const std::vector<double>& r, const std::vector<double>& diagonal) {
  std::vector<double> z(r.size());
  for (std::size_t i = 0; i < r.size(); ++i) z[i] = r[i] / diagonal[i];
  return z;
}

}  // namespace

void project_out_mean(std::vector<double>& v) {
  if (v.empty()) return;
  const double mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  for (double& x : v) x -= mean;
}

projected_cg_outcome projected_cg(const linear_map& apply, std::vector<double> rhs,
                                  const std::vector<double>& diagonal, const projected_cg_settings& settings) {
  return projected_cg(apply, std::move(rhs), [&diagonal](const std::vector<double>& r) { return divided(r, diagonal); },
                      settings);
}

projected_cg_outcome projected_cg(const linear_map& apply, std::vector<double> rhs, const linear_map& precondition,
                                  const projected_cg_settings& settings) {
  projected_cg_outcome out;
  out.solution.assign(rhs.size(), 0.0);
  std::vector<double>& x = out.solution;
  std::vector<double>& r = rhs;  // r₀ = rhs − S·0
  if (settings.project) project_out_mean(r);
  const double initial = std::sqrt(dot(r, r));
  if (!(initial > 0)) return out;

  std::vector<double> z = precondition(r);
  std::vector<double> p = z;
  double rz = dot(r, z);
  double residual = 1;
  std::vector<double> r_last;  // flexible β only
  while (out.iterations < settings.max_iterations) {
    const std::vector<double> q = apply(p);
    const double curvature = dot(p, q);
    if (!(curvature > 0)) {
      out.breakdown = true;
      break;
    }
    const double alpha = rz / curvature;
    if (settings.flexible) r_last = r;
    for (std::size_t i = 0; i < x.size(); ++i) {
      x[i] += alpha * p[i];
      r[i] -= alpha * q[i];
    }
    if (settings.project) project_out_mean(r);
    ++out.iterations;
    residual = std::sqrt(dot(r, r)) / initial;
    if (residual <= settings.tolerance) break;
    z = precondition(r);
    const double rz_next = dot(r, z);
    double beta = rz_next / rz;
    if (settings.flexible) {
      if (!(rz_next > 0)) {  // the preconditioner was not positive on r
        out.breakdown = true;
        break;
      }
      for (std::size_t i = 0; i < r_last.size(); ++i) r_last[i] = r[i] - r_last[i];
      beta = dot(r_last, z) / rz;
    }
    rz = rz_next;
    for (std::size_t i = 0; i < p.size(); ++i) p[i] = z[i] + beta * p[i];
  }
  out.recurrence_residual = residual;
  return out;
}

}  // namespace flashsinkhorn::detail
