// The damped potential system (potential_system_settings::ridge,
// hvp_options::ridge):
//   - CG on S + ridge·diag(c) (no projection: the damped matrix is positive
//   definite) matches a
//     dense solve of the same matrix, assembled column by column from the
//     plan's own passes;
//   - ridge = 0 is the exact system, and the HVP's implicit part shrinks
//   monotonically with the
//     ridge: for ρ ⊥ 1, ρᵀ(S + τ·diag c)⁻¹ρ decreases in τ and stays below
//     ρᵀS⁺ρ, so 0 ≤ ⟨A, H_imp,τ₂·A⟩ ≤ ⟨A, H_imp,τ₁·A⟩ ≤ ⟨A, H_imp·A⟩ for τ₂ >
//     τ₁ > 0.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/potential_system.hpp"
#include "core/prepare.hpp"
#include "core/solved_plan.hpp"
#include "cpp/backend_sinkhorn.hpp"
#include "cpp/hvp_support.hpp"
#include "cpu/cpu_backend.hpp"
#include "reference/dense_linear_solve.hpp"

namespace fd = flashsinkhorn::detail;
namespace fs = flashsinkhorn;
using namespace testing_support;

namespace {

TEST(DampedPotentialSystem, CgMatchesADenseSolveOfTheDampedMatrix) {
  std::mt19937_64 rng(3);
  fd::prepared_problem problem;
  problem.x = random_prepared_cloud(37, 3, 0.0, rng);
  problem.y = random_prepared_cloud(29, 3, 0.5, rng);
  fd::centre_clouds(problem);
  const double eps = 0.3;
  auto compute = fd::make_cpu_backend(problem, fs::precision::fp64, 1);
  alternate_sinkhorn(*compute, eps, 500);
  const fd::solved_plan plan(*compute, problem, eps);
  const std::size_t n = 37, m = 29;

  // S column by column: S·e_j = c_j e_j − Pᵀ(P e_j / a).
  const std::vector<double>& c = plan.column_mass();
  std::vector<double> s(m * m);
  for (std::size_t j = 0; j < m; ++j) {
    std::vector<double> unit(m, 0.0);
    unit[j] = 1;
    const std::vector<double> column = plan.apply_transpose(plan.row_average(unit, 1), 1);
    for (std::size_t i = 0; i < m; ++i) s[i * m + j] = (i == j ? c[i] : 0.0) - column[i];
  }

  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<double> r_f(n), r_g(m);
  for (double& v : r_f) v = normal(rng);
  for (double& v : r_g) v = normal(rng);
  for (const double ridge : {1e-3, 0.1, 1.0}) {
    const fd::potential_system_solution z = fd::solve_potential_system(
        plan, problem.x.weights, r_f, r_g, {1e-12, 500, fs::cg_preconditioner::diagonal, ridge});
    EXPECT_TRUE(z.converged) << z.relative_residual;

    // The same right-hand side by hand: gauge removed, ρ = r_g − Pᵀ(r_f/a),
    // then the dense solve.
    double shift = 0;
    for (double v : r_f) shift += v;
    for (double v : r_g) shift -= v;
    shift /= static_cast<double>(n + m);
    std::vector<double> rf_over_a(n);
    for (std::size_t i = 0; i < n; ++i) rf_over_a[i] = (r_f[i] - shift) / problem.x.weights[i];
    std::vector<double> rho = plan.apply_transpose(rf_over_a, 1);
    double mean = 0;
    for (std::size_t j = 0; j < m; ++j) mean += (rho[j] = r_g[j] + shift - rho[j]);
    for (double& v : rho) v -= mean / static_cast<double>(m);
    std::vector<double> damped = s;
    for (std::size_t j = 0; j < m; ++j) damped[j * m + j] += ridge * c[j];
    const std::vector<double> want = reference::dense_solve(damped, rho);

    // z.g was moved along (1, −1) to the minimum-norm gauge; δf_i + δg_j is
    // what the HVP uses and is gauge-free, so compare the gauge-free
    // differences g_j − g_0.
    double worst = 0, scale = 0;
    for (std::size_t j = 0; j < m; ++j) {
      worst = std::max(worst, std::abs((z.g[j] - z.g[0]) - (want[j] - want[0])));
      scale = std::max(scale, std::abs(want[j] - want[0]));
    }
    EXPECT_LT(worst, 1e-9 * scale) << "ridge " << ridge;
  }
}

TEST(DampedPotentialSystem, TheImplicitPartShrinksWithTheRidge) {
  const reference::cloud x = reference::random_cloud(41, 3, 11);
  const reference::cloud y = reference::random_cloud(33, 3, 12, 1.0, 0.4);
  fs::options o = tight_fp64();
  o.tolerance = 1e-12;
  fs::solver s(make_problem(x, y, 0.5, 1.0), o);
  ASSERT_TRUE(s.solve().converged);
  const std::vector<double> a = random_direction(x.count * x.dim, 4);

  double previous = INFINITY;
  for (const double ridge : {0.0, 1e-3, 1e-2, 1e-1, 1.0}) {
    fs::hvp_options settings = tight_hvp();
    settings.part = fs::hvp_part::implicit;
    settings.ridge = ridge;
    const std::vector<double> h = library_hvp(s, x, true, a, settings);
    double curvature = 0;
    for (std::size_t i = 0; i < a.size(); ++i) curvature += a[i] * h[i];
    EXPECT_GE(curvature, 0) << "ridge " << ridge;
    EXPECT_LT(curvature, previous) << "ridge " << ridge;
    previous = curvature;
  }
}

}  // namespace
