// The device-resident CG of the potential system (cuda/schur_cg.hpp,
// backend::solve_schur) against the host CG of core/projected_cg.hpp over the
// same backend's passes, in every mode, on a problem solved by the backend's
// own Sinkhorn steps:
//   - both reach the tolerance, and the device solution's residual, recomputed
//   on the host from
//     the returned z_g (potential_system.cpp), is within it: the device CG
//     solves the system the host's passes define;
//   - the two solutions agree (the same recurrence in float64; only reduction
//   orders differ) and
//     take nearly the same number of iterations.
// The tf32 and bf16 cases are the reason for the FMA pass (plan_mma_kernel.cuh,
// k = 1): with P and v rounded to tf32 in the products, CG stalled at a
// residual of 0.15 on 10,000 × 64.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/backend.hpp"
#include "core/potential_system.hpp"
#include "core/prepare.hpp"
#include "core/solved_plan.hpp"
#include "cpp/backend_sinkhorn.hpp"
#include "cuda/cuda_backend.hpp"
#include "cuda/dense_schur.hpp"
#include "cuda/device_memory_pool.hpp"
#include "cuda/kernel_variant.hpp"
#include "cuda/plan_rows_launch.hpp"
#include "flashsinkhorn/options.hpp"
#include "gpu/gpu_test_support.hpp"

namespace {

using flashsinkhorn::precision;
using namespace flashsinkhorn::detail;

double relative_distance(const std::vector<double>& a, const std::vector<double>& b) {
  double diff = 0, norm = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    diff += (a[i] - b[i]) * (a[i] - b[i]);
    norm += b[i] * b[i];
  }
  return std::sqrt(diff / norm);
}

// X ~ N(0, I_d), Y ~ N(0.3, I_d), uniform weights, centred, solved by the CUDA backend's own
// Sinkhorn steps (1,000 alternating iterations at ε), and a random right-hand side (r_f, r_g).
struct sharp_system {
  prepared_problem problem;
  std::unique_ptr<backend> gpu;
  std::unique_ptr<solved_plan> plan;
  std::vector<double> r_f, r_g;

  sharp_system(precision mode, std::uint64_t seed, std::int64_t n, std::int64_t m, std::int64_t d, double eps) {
    std::mt19937_64 rng(seed);
    problem.x = gpu_tests::random_cloud(n, d, false, rng, 0.0);
    problem.y = gpu_tests::random_cloud(m, d, false, rng, 0.3);
    centre_clouds(problem);
    gpu = make_cuda_backend(problem, mode, 0);
    testing_support::alternate_sinkhorn(*gpu, eps, 1000);
    plan = std::make_unique<solved_plan>(*gpu, problem, eps);
    std::normal_distribution<double> normal(0.0, 1.0);
    r_f.resize(static_cast<std::size_t>(n));
    r_g.resize(static_cast<std::size_t>(m));
    for (double& v : r_f) v = normal(rng) / static_cast<double>(n);
    for (double& v : r_g) v = normal(rng) / static_cast<double>(m);
  }
  sharp_system(const sharp_system&) = delete;  // plan refers to problem
  sharp_system& operator=(const sharp_system&) = delete;
};

class schur_cg_test : public gpu_tests::needs_gpu<::testing::TestWithParam<precision>> {};

TEST_P(schur_cg_test, device_cg_matches_the_host_cg_on_the_same_passes) {
  const precision mode = GetParam();
  // A sharp plan (ε a fraction of the typical cost 2·24): S is ill-conditioned,
  // tens to hundreds of CG iterations at 1e-6, as in the benchmarks.
  const sharp_system made(mode, 77, 2053, 1531, 24, 1.0);
  const prepared_problem& problem = made.problem;
  const solved_plan& plan = *made.plan;
  const std::vector<double>& r_f = made.r_f;
  const std::vector<double>& r_g = made.r_g;

  const double tolerance = mode == precision::fp64 ? 1e-10 : 1e-6;
  // Exact (projected CG) and damped (plain CG on S + ridge·diag(c)).
  for (const double ridge : {0.0, 0.01}) {
    potential_system_settings settings{tolerance, 3000, flashsinkhorn::cg_preconditioner::diagonal, ridge};
    const potential_system_solution on_device = solve_potential_system(plan, problem.x.weights, r_f, r_g, settings);
    settings.host_cg = true;
    const potential_system_solution on_host = solve_potential_system(plan, problem.x.weights, r_f, r_g, settings);

    const double distance = relative_distance(on_device.g, on_host.g);
    std::cout << "[ schur cg " << flashsinkhorn::to_string(mode) << ", ridge " << ridge << " ] device "
              << on_device.iterations << " iterations, residual " << on_device.relative_residual << "; host "
              << on_host.iterations << " iterations, residual " << on_host.relative_residual
              << "; ‖z_dev − z_host‖/‖z_host‖ " << distance << "\n";
    EXPECT_TRUE(on_host.converged) << on_host.relative_residual;
    EXPECT_TRUE(on_device.converged) << on_device.relative_residual;
    // The recurrences differ only in summation order: a handful of iterations at most.
    EXPECT_LE(std::abs(on_device.iterations - on_host.iterations), 3 + on_host.iterations / 50);
    // Two solutions within `tolerance` of the same system differ by up to κ(S)·tolerance; κ ≈ 1e3.
    EXPECT_LT(distance, mode == precision::fp64 ? 1e-7 : 3e-3);
    EXPECT_LT(relative_distance(on_device.f, on_host.f), mode == precision::fp64 ? 1e-7 : 3e-3);
  }
}

// The sparse_plan preconditioner on the device (cuda/sparse_schur.hpp: top entries, S_k, an inner
// CG; the outer CG flexible) against the host CG with the diagonal one and with the host's exact
// S_k solve: the same solution, converged, in a fraction of the diagonal's iterations and within a
// few of the host sparse CG's (the inner solve stops at 1e-2).
TEST_P(schur_cg_test, device_sparse_plan_cg_needs_a_fraction_of_the_iterations) {
  const precision mode = GetParam();
  const sharp_system made(mode, 78, 1800, 1500, 16, 0.5);  // sharp: the largest entry holds most of its row
  const prepared_problem& problem = made.problem;
  const solved_plan& plan = *made.plan;
  const std::vector<double>& r_f = made.r_f;
  const std::vector<double>& r_g = made.r_g;

  const double tolerance = mode == precision::fp64 ? 1e-9 : 1e-5;
  for (const double ridge : {0.0, 0.01}) {
    using flashsinkhorn::cg_preconditioner;
    potential_system_settings settings{tolerance, 3000, cg_preconditioner::sparse_plan, ridge};
    const potential_system_solution sparse = solve_potential_system(plan, problem.x.weights, r_f, r_g, settings);
    settings.host_cg = true;
    const potential_system_solution host_sparse = solve_potential_system(plan, problem.x.weights, r_f, r_g, settings);
    settings.preconditioner = cg_preconditioner::diagonal;
    const potential_system_solution diagonal = solve_potential_system(plan, problem.x.weights, r_f, r_g, settings);
    std::cout << "[ sparse schur cg " << flashsinkhorn::to_string(mode) << ", ridge " << ridge << " ] device sparse "
              << sparse.iterations << " iterations, residual " << sparse.relative_residual << "; host sparse "
              << host_sparse.iterations << "; host diagonal " << diagonal.iterations
              << "; ‖z − z_diag‖/‖z_diag‖ " << relative_distance(sparse.g, diagonal.g) << "\n";
    EXPECT_TRUE(sparse.converged) << sparse.relative_residual;
    EXPECT_TRUE(diagonal.converged) << diagonal.relative_residual;
    EXPECT_LE(3 * sparse.iterations, diagonal.iterations);
    EXPECT_LE(sparse.iterations, 2 * host_sparse.iterations + 3);
    EXPECT_LT(relative_distance(sparse.g, diagonal.g), mode == precision::fp64 ? 1e-6 : 3e-3);
    EXPECT_LT(relative_distance(sparse.f, diagonal.f), mode == precision::fp64 ? 1e-6 : 3e-3);
  }
}

// At these sizes the device takes the dense preconditioner (cuda/dense_schur.hpp: every plan entry
// kept, S factored) — 900 × 700 × 16 by the small-system rule, 2,600 × 2,300 × 96 by the larger one
// (m > 2,048, m ≤ 80·d, s written directly in fp64): with S itself as the preconditioner the flexible
// CG takes a few iterations, to the same solution as the diagonal's. FLASHSINKHORN_SCHUR_SOLVE=sparse
// (gpu_check's variant pass) keeps it on S_k: the test then only checks the solution.
TEST_P(schur_cg_test, device_dense_schur_cg_takes_a_few_iterations) {
  const precision mode = GetParam();
  if (mode != precision::fp64) GTEST_SKIP() << "float64 passes: the single-precision ones are redone there";
  struct case_shape { std::int64_t n, m, d; double eps; bool small; };  // ε: about as sharp a plan at either d
  for (const case_shape& shape : {case_shape{900, 700, 16, 0.5, true}, case_shape{2600, 2300, 96, 2.0, false}}) {
    ASSERT_EQ(dense_schur_fits(shape.n, shape.m, shape.d, false), shape.small);
    ASSERT_TRUE(dense_schur_fits(shape.n, shape.m, shape.d, plan_softmax_applies(mode)));
    const sharp_system made(mode, 79, shape.n, shape.m, shape.d, shape.eps);
    const prepared_problem& problem = made.problem;
    const solved_plan& plan = *made.plan;
    for (const double ridge : {0.0, 0.01}) {
      using flashsinkhorn::cg_preconditioner;
      potential_system_settings settings{1e-9, 3000, cg_preconditioner::sparse_plan, ridge};
      const potential_system_solution dense = solve_potential_system(plan, problem.x.weights, made.r_f, made.r_g, settings);
      settings.preconditioner = cg_preconditioner::diagonal;
      const potential_system_solution diagonal = solve_potential_system(plan, problem.x.weights, made.r_f, made.r_g, settings);
      std::cout << "[ dense schur cg, " << shape.n << " x " << shape.m << " x " << shape.d << ", ridge " << ridge << " ] "
                << dense.iterations << " iterations, residual " << dense.relative_residual << "; diagonal "
                << diagonal.iterations << "\n";
      EXPECT_TRUE(dense.converged) << dense.relative_residual;
      EXPECT_TRUE(diagonal.converged) << diagonal.relative_residual;
      if (dense_schur_enabled()) {
        EXPECT_LE(dense.iterations, 4);
      }
      EXPECT_LT(relative_distance(dense.g, diagonal.g), 1e-6);
      EXPECT_LT(relative_distance(dense.f, diagonal.f), 1e-6);
    }
  }
}

// Device memory held by someone else: all of the device's free memory but `left` bytes, in
// 1 GiB pieces (one allocation of ~100 GB can fail where pieces fit), given back on destruction.
class memory_hog {
 public:
  explicit memory_hog(std::size_t left) {
    constexpr std::size_t piece = std::size_t{1} << 30;
    for (;;) {
      std::size_t free_bytes = 0, total_bytes = 0;
      if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess || free_bytes <= left) break;
      void* held = nullptr;
      if (cudaMalloc(&held, std::min(piece, free_bytes - left)) != cudaSuccess) break;
      pieces_.push_back(held);
    }
    (void)cudaGetLastError();  // a refused piece leaves no error behind
  }
  memory_hog(const memory_hog&) = delete;
  memory_hog& operator=(const memory_hog&) = delete;
  ~memory_hog() {
    for (void* held : pieces_) (void)cudaFree(held);
  }

 private:
  std::vector<void*> pieces_;
};

// The factored S needs s (n·m doubles) and S (m²): 4,000 × 3,500 × 128 in float64 is inside the
// larger rule (m ≤ 80·d) and needs 112 + 98 MB. With all but 48 MB of the device held elsewhere the
// build runs out of memory and solve_schur must fall back to S_k — converged, to the diagonal's
// solution, in S_k's iterations — and, once the memory is back, factor S again (≤ 2 iterations).
TEST(schur_cg_memory, device_dense_schur_out_of_memory_takes_s_k) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  if (!dense_schur_enabled()) GTEST_SKIP() << "FLASHSINKHORN_SCHUR_SOLVE=sparse: S is never factored";
  const std::int64_t n = 4000, m = 3500, d = 128;
  ASSERT_TRUE(dense_schur_fits(n, m, d, plan_softmax_applies(precision::fp64)));
  const sharp_system made(precision::fp64, 80, n, m, d, 2.5);
  using flashsinkhorn::cg_preconditioner;
  potential_system_settings settings{1e-9, 3000, cg_preconditioner::diagonal, 0.0};
  const potential_system_solution diagonal =
      solve_potential_system(*made.plan, made.problem.x.weights, made.r_f, made.r_g, settings);
  settings.preconditioner = cg_preconditioner::sparse_plan;
  potential_system_solution squeezed;
  {
    release_device_pools();
    const memory_hog hog(std::size_t{48} << 20);
    squeezed = solve_potential_system(*made.plan, made.problem.x.weights, made.r_f, made.r_g, settings);
  }
  const potential_system_solution factored =
      solve_potential_system(*made.plan, made.problem.x.weights, made.r_f, made.r_g, settings);
  std::cout << "[ dense schur out of memory ] squeezed " << squeezed.iterations << " iterations, residual "
            << squeezed.relative_residual << "; memory back " << factored.iterations << "; diagonal "
            << diagonal.iterations << "\n";
  EXPECT_TRUE(diagonal.converged) << diagonal.relative_residual;
  EXPECT_TRUE(squeezed.converged) << squeezed.relative_residual;
  EXPECT_GT(squeezed.iterations, 2);  // S_k's iterations, not the factor's
  EXPECT_LT(relative_distance(squeezed.g, diagonal.g), 1e-6);
  EXPECT_LT(relative_distance(squeezed.f, diagonal.f), 1e-6);
  EXPECT_TRUE(factored.converged) << factored.relative_residual;
  EXPECT_LE(factored.iterations, 2);
  EXPECT_LT(relative_distance(factored.g, diagonal.g), 1e-6);
}

std::string name_of(const ::testing::TestParamInfo<precision>& info) {
  return std::string(flashsinkhorn::to_string(info.param));
}

INSTANTIATE_TEST_SUITE_P(Modes, schur_cg_test,
                         ::testing::Values(precision::fp64, precision::fp32, precision::tf32, precision::bf16),
                         name_of);

}  // namespace
