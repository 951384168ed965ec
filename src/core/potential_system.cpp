#include "core/potential_system.hpp"

#include <algorithm>
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
  const bool sparse = settings.preconditioner == cg_preconditioner::sparse_plan;
  const std::vector<double> preconditioner =
      settings.preconditioner == cg_preconditioner::none ? std::vector<double>(m, 1.0) : c;
  const bool exact = settings.ridge == 0;  // damped: S + ridge·diag(c) is positive definite, no projection
  const projected_cg_settings cg_settings{settings.tolerance, settings.max_iterations, exact};
  // CG on S·x = rhs: the backend's own (the CUDA backend's: no host round trip per iteration), else
  // the host's; with_sparse: preconditioned by S_k (sparse_plan_preconditioner.hpp), else by diag.
  const auto solve = [&](const std::vector<double>& rhs, const projected_cg_settings& cg_with, bool with_sparse) {
    std::optional<projected_cg_outcome> cg;
    if (!settings.host_cg) {
      schur_system system = plan.schur();
      system.column_sums = &c;  // (1 + ridge)·c: the damped diagonal
      if (with_sparse) {
        system.sparse_row_masses = &a;
        system.sparse_shift = sparse_plan_shift(c, exact);
      }
      cg = plan.compute().solve_schur(system, rhs, preconditioner, cg_with);
      if (cg) plan.count_passes(2 * cg->iterations + (with_sparse ? 1 : 0));  // (+ the top-entries pass)
    }
    if (!cg && with_sparse) {  // S_k built and solved on the host (an inner CG)
      const sparse_plan_preconditioner host_sparse(plan, plan.problem(), a, c, exact);
      plan.count_passes(1);  // its scan of the scores for the top entries
      projected_cg_settings flexible = cg_with;
      flexible.flexible = true;  // the inner solve is inexact (kSparsePlanInnerTolerance)
      cg = projected_cg(schur, rhs, [&host_sparse](const std::vector<double>& r) { return host_sparse.solve(r); },
                        flexible);
    } else if (!cg) {
      cg = projected_cg(schur, rhs, preconditioner, cg_with);
    }
    return std::move(*cg);
  };
  // ‖ρ − S·z‖/‖ρ‖ (0 when ρ = 0): one more product.
  const double rho_norm = norm(rho);
  const auto relative_residual = [&](const std::vector<double>& z) {
    if (!(rho_norm > 0)) return 0.0;
    std::vector<double> residual = schur(z);
    for (std::size_t j = 0; j < m; ++j) residual[j] = rho[j] - residual[j];
    if (exact) project_out_mean(residual);
    return norm(residual) / rho_norm;
  };
  // A single-precision solve whose caller redoes it in float64 gives the sparse CG a budget of its
  // own: it converges in a few iterations or falls short (below).
  const bool redo_if_short = sparse && settings.stop_when_sparse_falls_short;
  projected_cg_settings first = cg_settings;
  if (redo_if_short) first.max_iterations = std::min(first.max_iterations, kSinglePrecisionSparseIterations);
  projected_cg_outcome cg = solve(rho, first, sparse);
  out.g = std::move(cg.solution);
  out.iterations = cg.iterations;
  std::optional<double> residual;  // of out.g, once computed
  if (redo_if_short && (cg.breakdown || cg.iterations >= first.max_iterations)) {
    // Short of the tolerance, the caller redoes its product in float64 (float64_replica.hpp): a
    // breakdown (below), or a crawl — S_k built from a single-precision plan can slow the flexible
    // CG to hundreds of iterations where float64 passes take 4 (1,000 × 8, fp32, 10 iterations:
    // 7e-5 after 1,000 against 1e-6 in 4).
    residual = relative_residual(out.g);
    if (!(*residual <= settings.tolerance)) {
      out.relative_residual = *residual;
      out.sparse_fell_short = true;
      return out;
    }
  }
  if (sparse && cg.breakdown) {
    // Non-positive curvature under S_k. Before convergence S is indefinite at the level of its
    // rounding (its diagonal c comes from a pass whose values carry exp((f̃ − f)/ε)), and S_k, whose
    // near-null directions are S's, amplifies that rounding: in fp32 after 5–10 iterations the
    // flexible CG stops within a few iterations, at residual ~1e-2 or after a wild step. Its iterate
    // is then no start for another CG either (diag(c) from it missed the tolerance in 400
    // iterations where it needs ~250 from zero: 300 × 16, seeds 75–89). So, unless the breakdown
    // came at the tolerance (roundoff at convergence), the solve starts over with diag(c), from
    // zero, with its own iteration budget; `iterations` counts both. (A caller that redoes its
    // product in float64 has been handed back above.)
    if (!residual) residual = relative_residual(out.g);
    if (!(*residual <= settings.tolerance)) {
      const projected_cg_outcome again = solve(rho, cg_settings, false);
      out.g = again.solution;
      out.iterations += again.iterations;
      residual.reset();  // of the discarded iterate
    }
  }

  // The residual of the returned z_g, not the recurrence's (they part at the roundoff floor); known
  // already when the breakdown check above kept z_g (each costs a product: two plan passes).
  out.relative_residual = residual ? *residual : relative_residual(out.g);
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
