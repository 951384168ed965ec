// Streamed plan products against the dense plan of the reference: P·V, Pᵀ·U (k = 1 and k = 70; every
// column count around the CPU's dot/sweep boundary in fp32 and fp64), the barycentric projection and
// the primal cost ⟨P, C⟩.
#include <gtest/gtest.h>

#include <string>

#include "test_problems.hpp"

namespace fs = flashsinkhorn;
using namespace testing_support;

namespace {

std::vector<double> random_matrix(std::int64_t rows, std::int64_t cols, std::uint64_t seed) {
  return reference::random_cloud(rows, cols, seed).points;
}

// solver.apply_plan(V) against Σ_j plan_ij·V_jc for a random V of k columns (seed), every entry
// within `tolerance`.
void expect_plan_product(const fs::solver& solver, const std::vector<double>& plan, std::int64_t n, std::int64_t m,
                         std::int64_t k, std::uint64_t seed, double tolerance, const std::string& what) {
  const std::vector<double> v = random_matrix(m, k, seed);
  std::vector<double> out(static_cast<std::size_t>(n * k));
  solver.apply_plan(fs::host_matrix(v.data(), m, k), fs::host_matrix(out.data(), n, k));
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t c = 0; c < k; ++c) {
      double expected = 0;
      for (std::int64_t j = 0; j < m; ++j) expected += plan[i * m + j] * v[j * k + c];
      ASSERT_NEAR(out[i * k + c], expected, tolerance) << what << " P·V k=" << k << " i=" << i << " c=" << c;
    }
  }
}

TEST(Plan, ProductsMatchTheDensePlan) {
  const reference::cloud x = reference::random_cloud(97, 5, 81);
  const reference::cloud y = reference::random_cloud(130, 5, 82, 1.0, 0.5);
  const double eps = 0.5, s = 0.5;
  fs::options o = fixed_iterations(2000, fs::precision::fp64);
  o.tolerance = 1e-13;
  fs::solver solver(make_problem(x, y, eps, s), o);
  const fs::result r = solver.solve();
  ASSERT_TRUE(r.converged);
  const std::vector<double> plan = reference::row_plan(x, y, r.g, eps, s);  // (n, m)
  for (std::int64_t k : {1, 70}) expect_plan_product(solver, plan, x.count, y.count, k, 83 + k, 1e-13, "converged fp64");
  // Pᵀ·U uses the column-renormalised plan of f; converged, both plans agree to the marginal error.
  const std::vector<double> u = random_matrix(x.count, 3, 90);
  std::vector<double> out(static_cast<std::size_t>(y.count * 3));
  solver.apply_plan_transpose(fs::host_matrix(u.data(), x.count, 3), fs::host_matrix(out.data(), y.count, 3));
  for (std::int64_t j = 0; j < y.count; ++j) {
    for (std::int64_t c = 0; c < 3; ++c) {
      double expected = 0;
      for (std::int64_t i = 0; i < x.count; ++i) expected += plan[i * y.count + j] * u[i * 3 + c];
      ASSERT_NEAR(out[j * 3 + c], expected, 1e-12) << "Pᵀ·U j=" << j;
    }
  }
}

// The CPU backend sums a tile's P·V one dot per column below 8 columns and by column sweeps from 8
// on (with remainder blocks of 2 and 1 vectors, padding columns dropped): every column count around
// those boundaries, in both working types, against the dense plan of the solver's own potential.
TEST(Plan, ProductsMatchTheDensePlanAtEveryColumnCount) {
  const reference::cloud x = reference::random_cloud(75, 3, 91);
  const reference::cloud y = reference::random_cloud(150, 3, 92, 1.0, 0.5);
  const double eps = 0.5, s = 0.5;
  for (const fs::precision mode : {fs::precision::fp64, fs::precision::fp32}) {
    fs::solver solver(make_problem(x, y, eps, s), fixed_iterations(50, mode));
    const fs::result r = solver.solve();
    const std::vector<double> plan = reference::row_plan(x, y, r.g, eps, s);  // (n, m), in float64
    const double tolerance = mode == fs::precision::fp64 ? 1e-13 : 2e-5;
    for (std::int64_t k : {1, 3, 7, 8, 9, 13, 16, 17, 24, 33, 70})
      expect_plan_product(solver, plan, x.count, y.count, k, 93 + k, tolerance,
                          mode == fs::precision::fp64 ? "fp64" : "fp32");
  }
}

TEST(Plan, BarycentricProjectionAndPrimalCost) {
  const reference::cloud x = reference::random_cloud(65, 2, 91);
  const reference::cloud y = reference::random_cloud(49, 2, 92, 1.0, 2.0);
  const double eps = 0.3;
  for (fs::precision mode : {fs::precision::fp64, fs::precision::fp32}) {
    fs::solver solver(make_problem(x, y, eps, 1.0), fixed_iterations(60, mode));
    const fs::result r = solver.solve();
    const std::vector<double> plan = reference::row_plan(x, y, r.g, eps, 1.0);
    std::vector<double> t(static_cast<std::size_t>(x.count * 2));
    solver.barycentric_projection(fs::host_matrix(t.data(), x.count, 2));
    const double tol = mode == fs::precision::fp64 ? 1e-12 : 1e-5;
    double primal = 0;
    for (std::int64_t i = 0; i < x.count; ++i) {
      for (std::int64_t c = 0; c < 2; ++c) {
        double expected = 0;
        for (std::int64_t j = 0; j < y.count; ++j) expected += plan[i * y.count + j] * y.points[j * 2 + c];
        ASSERT_NEAR(t[i * 2 + c], expected / x.weights[i], tol * 10);
      }
      for (std::int64_t j = 0; j < y.count; ++j) primal += plan[i * y.count + j] * reference::sq_dist(x, i, y, j);
    }
    EXPECT_NEAR(r.primal_cost, primal, tol * primal * 10);
    // Entropy makes OT_ε = ⟨P,C⟩ + ε·KL(P‖a⊗b) ≥ ⟨P,C⟩.
    EXPECT_GT(r.cost, r.primal_cost - tol * primal);
  }
}

}  // namespace
