// The sparse_plan preconditioner (core/sparse_plan_preconditioner.hpp): on a sharp plan (small ε,
// a few significant entries per row) the exact solve of the Schur complement of the plan's 8
// largest entries per row takes CG to the same product as the diagonal preconditioner in a
// fraction of the iterations — on the exact system (projected CG) and the damped one.
#include <gtest/gtest.h>

#include <iostream>
#include <vector>

#include "cpp/hvp_support.hpp"

namespace fs = flashsinkhorn;
using namespace testing_support;

namespace {

TEST(SparsePlanPreconditioner, SameProductInAFractionOfTheIterations) {
  const reference::cloud x = reference::random_cloud(90, 3, 61);
  const reference::cloud y = reference::random_cloud(110, 3, 62, 1.0, 0.3);
  fs::solver s(make_problem(x, y, 0.05, 1.0), tight_fp64());  // C/ε up to ~500: rows of a few entries
  ASSERT_TRUE(s.solve().converged);
  const std::vector<double> a = random_direction(x.count * x.dim, 63);
  for (const double ridge : {0.0, 1e-3}) {
    fs::hvp_options diagonal = tight_hvp();
    diagonal.tolerance = 1e-10;
    diagonal.max_iterations = 5000;
    diagonal.ridge = ridge;
    fs::hvp_options sparse = diagonal;
    sparse.preconditioner = fs::cg_preconditioner::sparse_plan;
    fs::hvp_report with_diagonal, with_sparse;
    const std::vector<double> want = library_hvp(s, x, true, a, diagonal, &with_diagonal);
    const std::vector<double> got = library_hvp(s, x, true, a, sparse, &with_sparse);
    std::cout << "[ ridge " << ridge << " ] CG iterations: diagonal " << with_diagonal.cg_iterations << ", sparse_plan "
              << with_sparse.cg_iterations << "; relative difference " << relative_max_error(got, want) << "\n";
    EXPECT_TRUE(with_diagonal.converged);
    EXPECT_TRUE(with_sparse.converged);
    EXPECT_LT(relative_max_error(got, want), 1e-7);
    EXPECT_LE(4 * with_sparse.cg_iterations, with_diagonal.cg_iterations);
  }
}

}  // namespace

namespace {

// Before convergence, in fp32 (5 iterations, ε = 0.1: marginal error ~0.6), S is indefinite at the
// level of its rounding and S_k amplifies that: the sparse-preconditioned CG meets non-positive
// curvature (on this problem after a step that left the residual at 80× the right-hand side's). The
// solve then starts over with diag(c) (potential_system.cpp) and must reach the tolerance with the
// diagonal's product.
TEST(SparsePlanPreconditioner, UnconvergedFp32PlanStillReachesTheTolerance) {
  const reference::cloud x = reference::random_cloud(300, 16, 85);
  const reference::cloud y = reference::random_cloud(300, 16, 86);
  fs::solver s(make_problem(x, y, 0.1, 1.0), fixed_iterations(5, fs::precision::fp32));
  ASSERT_GT(s.solve().marginal_error, 0.1);
  const std::vector<double> a = random_direction(x.count * x.dim, 73);
  fs::hvp_options diagonal;
  diagonal.tolerance = 1e-4;
  diagonal.max_iterations = 400;
  fs::hvp_options sparse = diagonal;
  sparse.preconditioner = fs::cg_preconditioner::sparse_plan;
  fs::hvp_report with_diagonal, with_sparse;
  const std::vector<double> want = library_hvp(s, x, true, a, diagonal, &with_diagonal);
  const std::vector<double> got = library_hvp(s, x, true, a, sparse, &with_sparse);
  std::cout << "[ fp32, 5 iterations ] CG iterations: diagonal " << with_diagonal.cg_iterations << ", sparse_plan "
            << with_sparse.cg_iterations << "; relative difference " << relative_max_error(got, want) << "\n";
  EXPECT_TRUE(with_diagonal.converged);
  EXPECT_TRUE(with_sparse.converged) << with_sparse.relative_residual;
  EXPECT_LT(relative_max_error(got, want), 2e-3);
}

}  // namespace
