// Projected preconditioned CG (src/core/projected_cg.hpp) on dense PSD matrices with null vector 1:
// weighted graph Laplacians plus a diagonal spread, against the dense solution.
#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <random>

#include "core/projected_cg.hpp"
#include "reference/dense_linear_solve.hpp"

namespace fd = flashsinkhorn::detail;

namespace {

// L = D − W for random symmetric weights W ≥ 0 (strongly connected): PSD, L·1 = 0, rank size − 1.
// Rows scaled by `spread`ⁱ⁄ˢⁱᶻᵉ to make diagonal preconditioning matter.
std::vector<double> laplacian(std::int64_t size, double spread, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::vector<double> scale(static_cast<std::size_t>(size));
  for (std::int64_t i = 0; i < size; ++i) scale[i] = std::pow(spread, static_cast<double>(i) / static_cast<double>(size));
  std::vector<double> l(static_cast<std::size_t>(size * size), 0.0);
  for (std::int64_t i = 0; i < size; ++i) {
    for (std::int64_t j = i + 1; j < size; ++j) {
      const double w = (unit(rng) + 0.01) * std::sqrt(scale[i] * scale[j]) * (j == i + 1 ? 1.0 : 0.1);
      l[i * size + j] = l[j * size + i] = -w;
      l[i * size + i] += w;
      l[j * size + j] += w;
    }
  }
  return l;
}

std::vector<double> times(const std::vector<double>& a, const std::vector<double>& v) {
  const std::size_t size = v.size();
  std::vector<double> out(size, 0.0);
  for (std::size_t i = 0; i < size; ++i) {
    for (std::size_t j = 0; j < size; ++j) out[i] += a[i * size + j] * v[j];
  }
  return out;
}

TEST(ProjectedCg, SolvesASingularLaplacianOnTheComplementOfOnes) {
  const std::int64_t size = 40;
  for (double spread : {1.0, 1e3}) {
    const std::vector<double> l = laplacian(size, spread, 5);
    std::mt19937_64 rng(9);
    std::normal_distribution<double> normal;
    std::vector<double> rhs(static_cast<std::size_t>(size));
    for (double& v : rhs) v = normal(rng);
    fd::project_out_mean(rhs);
    std::vector<double> diagonal(static_cast<std::size_t>(size)), ones(static_cast<std::size_t>(size), 1.0);
    for (std::int64_t i = 0; i < size; ++i) diagonal[i] = l[i * size + i];

    // Dense oracle: L + 11ᵀ is nonsingular and agrees with L on 1⊥; its solution has mean 0.
    std::vector<double> filled = l;
    for (double& v : filled) v += 1.0;
    const std::vector<double> oracle = reference::dense_solve(filled, rhs);

    int iterations[2] = {0, 0};
    int k = 0;
    for (const std::vector<double>* m : {&ones, &diagonal}) {
      fd::projected_cg_outcome out = fd::projected_cg(
          [&](const std::vector<double>& v) { return times(l, v); }, rhs, *m, {1e-12, 500});
      EXPECT_FALSE(out.breakdown);
      EXPECT_LE(out.recurrence_residual, 1e-12);
      fd::project_out_mean(out.solution);
      double err = 0, scale = 0;
      for (std::int64_t i = 0; i < size; ++i) {
        err = std::max(err, std::abs(out.solution[i] - oracle[i]));
        scale = std::max(scale, std::abs(oracle[i]));
      }
      EXPECT_LT(err, 1e-9 * scale) << "spread " << spread << (k == 0 ? " plain" : " diagonal");
      iterations[k++] = out.iterations;
    }
    std::cout << "[ projected CG ] spread " << spread << ": " << iterations[0] << " iterations plain, "
              << iterations[1] << " with diag(L)\n";
  }
}

TEST(ProjectedCg, InconsistentRightHandSideSolvesItsProjection) {
  const std::int64_t size = 12;
  const std::vector<double> l = laplacian(size, 10.0, 3);
  std::vector<double> rhs(static_cast<std::size_t>(size), 0.0);
  rhs[0] = 1.0;  // Σ rhs = 1: only rhs − mean is reachable
  const std::vector<double> ones(static_cast<std::size_t>(size), 1.0);
  fd::projected_cg_outcome out =
      fd::projected_cg([&](const std::vector<double>& v) { return times(l, v); }, rhs, ones, {1e-13, 100});
  std::vector<double> residual = times(l, out.solution);
  std::vector<double> projected = rhs;
  fd::project_out_mean(projected);
  for (std::int64_t i = 0; i < size; ++i) EXPECT_NEAR(residual[i], projected[i], 1e-11);
}

TEST(ProjectedCg, ZeroRightHandSideIsZeroIterations) {
  const std::vector<double> l = laplacian(5, 1.0, 1);
  const fd::projected_cg_outcome out = fd::projected_cg(
      [&](const std::vector<double>& v) { return times(l, v); }, std::vector<double>(5, 2.0),
      std::vector<double>(5, 1.0), {1e-10, 10});  // constant: projects to 0
  EXPECT_EQ(out.iterations, 0);
  for (double v : out.solution) EXPECT_EQ(v, 0.0);
}


// The flexible β (projected_cg_settings::flexible) with a preconditioner that is itself an inexact
// CG (as the sparse_plan preconditioner's inner solve): the same solution as plain Jacobi CG on a
// wide-spread Laplacian, in fewer outer iterations; with a fixed preconditioner the two βs agree.
TEST(ProjectedCg, FlexibleStepsTolerateAnInexactPreconditioner) {
  const std::int64_t size = 60;
  const std::vector<double> l = laplacian(size, 1e3, 7);
  std::mt19937_64 rng(11);
  std::normal_distribution<double> normal;
  std::vector<double> rhs(static_cast<std::size_t>(size));
  for (double& v : rhs) v = normal(rng);
  fd::project_out_mean(rhs);
  std::vector<double> diagonal(static_cast<std::size_t>(size));
  for (std::int64_t i = 0; i < size; ++i) diagonal[i] = l[i * size + i];
  const fd::linear_map apply = [&](const std::vector<double>& v) { return times(l, v); };
  // M⁻¹r ≈ L⁺r by a Jacobi CG to 1e-2: a different linear map at every outer iteration.
  const fd::linear_map inexact = [&](const std::vector<double>& r) {
    std::vector<double> z = fd::projected_cg(apply, r, diagonal, {1e-2, 500}).solution;
    fd::project_out_mean(z);
    return z;
  };
  fd::projected_cg_settings flexible{1e-10, 500};
  flexible.flexible = true;
  fd::projected_cg_outcome got = fd::projected_cg(apply, rhs, inexact, flexible);
  fd::projected_cg_outcome want = fd::projected_cg(apply, rhs, diagonal, {1e-12, 2000});
  EXPECT_FALSE(got.breakdown);
  EXPECT_LE(got.recurrence_residual, 1e-10);
  EXPECT_LT(got.iterations, want.iterations);
  fd::project_out_mean(got.solution);
  fd::project_out_mean(want.solution);
  double err = 0, scale = 0;
  for (std::int64_t i = 0; i < size; ++i) {
    err = std::max(err, std::abs(got.solution[i] - want.solution[i]));
    scale = std::max(scale, std::abs(want.solution[i]));
  }
  EXPECT_LT(err, 1e-7 * scale);
  // With a fixed preconditioner the flexible β is the standard one: the same iterates up to roundoff.
  fd::projected_cg_settings plain{1e-12, 2000};
  fd::projected_cg_settings flexible_plain = plain;
  flexible_plain.flexible = true;
  EXPECT_NEAR(fd::projected_cg(apply, rhs, diagonal, flexible_plain).iterations, want.iterations, 2);
}

}  // namespace
