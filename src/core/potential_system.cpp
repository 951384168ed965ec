#include "core/potential_system.hpp"

#include <cmath>
#include <numeric>
#include <optional>

#include "core/projected_cg.hpp"
#include "core/sparse_plan_preconditioner.hpp"

namespace flashsinkhorn::detail {
namespace {

double sum(const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 0.0); }

double norm(const std::vector<double>& v) { return std::sqrt(std::inner_product(v.begin(), v.end(), v.begin(), 0.0)); }

}  // namespace

potential_system_solution solve_potential_system(const solved_plan& plan, const std::vector<double>& a,
                                                 std::vector<double> r_f, std::vector<double> r_g,
                                                 const potential_system_settings& settings) {
  potential_system_solution out;
  const std::size_t n = r_f.size(), m = r_g.size();
  // Remove the right-hand side's gauge component: the orthogonal projection onto (1, −1)⊥.
  out.gauge_defect = sum(r_f) - sum(r_g);
  const double shift = out.gauge_defect / static_cast<double>(n + m);
  for (double& v : r_f) v -= shift;
  for (double& v : r_g) v += shift;

  std::vector<double> rf_over_a(n);
  for (std::size_t i = 0; i < n; ++i) rf_over_a[i] = r_f[i] / a[i];
  std::vector<double> rho = plan.apply_transpose(rf_over_a, 1);
  for (std::size_t j = 0; j < m; ++j) rho[j] = r_g[j] - rho[j];
  project_out_mean(rho);

  // S + ridge·diag(c): the diagonal part scaled once.
  std::vector<double> c = plan.column_mass();
  for (double& v : c) v *= 1 + settings.ridge;
  const linear_map schur = [&](const std::vector<double>& v) {
    std::vector<double> out_s = plan.apply_transpose(plan.row_average(v, 1), 1);
    for (std::size_t j = 0; j < v.size(); ++j) out_s[j] = c[j] * v[j] - out_s[j];
    return out_s;
  };
  const std::vector<double> preconditioner =
      settings.preconditioner == cg_preconditioner::diagonal ? c : std::vector<double>(m, 1.0);
  const bool exact = settings.ridge == 0;  // damped: S + ridge·diag(c) is positive definite, no projection
  const projected_cg_settings cg_settings{settings.tolerance, settings.max_iterations, exact};
  std::optional<projected_cg_outcome> cg;
  const bool sparse = settings.preconditioner == cg_preconditioner::sparse_plan;
  if (!settings.host_cg) {  // the backend's own CG (the CUDA backend's: no host round trip per iteration)
    schur_system system = plan.schur();
    system.column_sums = &c;  // (1 + ridge)·c: the damped diagonal
    if (sparse) {
      system.sparse_row_masses = &a;
      system.sparse_shift = sparse_plan_shift(c, exact);
    }
    cg = plan.compute().solve_schur(system, rho, preconditioner, cg_settings);
    if (cg) plan.count_passes(2 * cg->iterations + (sparse ? 1 : 0));  // (+ the top-entries pass)
  }
  if (!cg && sparse) {  // S_k built and solved on the host (an inner CG)
    const sparse_plan_preconditioner host_sparse(plan, plan.problem(), a, c, exact);
    plan.count_passes(1);  // its scan of the scores for the top entries
    projected_cg_settings flexible = cg_settings;
    flexible.flexible = true;  // the inner solve is inexact (kSparsePlanInnerTolerance)
    cg = projected_cg(schur, rho, [&host_sparse](const std::vector<double>& r) { return host_sparse.solve(r); },
                      flexible);
  } else if (!cg) {
    cg = projected_cg(schur, rho, preconditioner, cg_settings);
  }
  out.g = std::move(cg->solution);
  out.iterations = cg->iterations;

  // The residual of the returned z_g, not the recurrence's (they part at the roundoff floor).
  const double rho_norm = norm(rho);
  if (rho_norm > 0) {
    std::vector<double> residual = schur(out.g);
    for (std::size_t j = 0; j < m; ++j) residual[j] = rho[j] - residual[j];
    if (exact) project_out_mean(residual);
    out.relative_residual = norm(residual) / rho_norm;
  }
  out.converged = out.relative_residual <= settings.tolerance;

  out.f = plan.row_average(out.g, 1);
  for (std::size_t i = 0; i < n; ++i) out.f[i] = rf_over_a[i] - out.f[i];
  // Minimum norm: move z along (1, −1) to Σz_f = Σz_g.
  const double gauge = (sum(out.f) - sum(out.g)) / static_cast<double>(n + m);
  for (double& v : out.f) v -= gauge;
  for (double& v : out.g) v += gauge;
  return out;
}

potential_system_solution solve_symmetric_potential_system(const solved_plan& plan, const std::vector<double>& a,
                                                           const std::vector<double>& r,
                                                           const potential_system_settings& settings) {
  potential_system_solution out;
  const std::size_t n = r.size();
  // (diag(a) + P)·v = a∘(v + A_x(v)), A_x = diag(1/a)·P the x-rows pass.
  const linear_map system = [&](const std::vector<double>& v) {
    std::vector<double> product = plan.row_average(v, 1);
    for (std::size_t i = 0; i < n; ++i) product[i] = a[i] * (v[i] + product[i]);
    return product;
  };
  const std::vector<double> preconditioner =
      settings.preconditioner != cg_preconditioner::none ? a : std::vector<double>(n, 1.0);  // (sparse_plan: diag)
  projected_cg_outcome cg =
      projected_cg(system, r, preconditioner, {settings.tolerance, settings.max_iterations, /*project=*/false});
  out.iterations = cg.iterations;
  const double r_norm = norm(r);
  if (r_norm > 0) {
    std::vector<double> residual = system(cg.solution);
    for (std::size_t i = 0; i < n; ++i) residual[i] = r[i] - residual[i];
    out.relative_residual = norm(residual) / r_norm;
  }
  out.converged = out.relative_residual <= settings.tolerance;
  out.f = cg.solution;
  out.g = std::move(cg.solution);
  return out;
}

}  // namespace flashsinkhorn::detail
