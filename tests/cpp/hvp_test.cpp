// solver::hvp_x / hvp_y against math facts, float64 on the CPU:
//   the dense Hessian of the converged value from central differences of the exact gradient
//   (every column: the HVP of each basis direction), for X and Y, several sizes and cost scales;
//   symmetry ⟨B, H·A⟩ = ⟨A, H·B⟩; full = fixed-potential + implicit; the implicit part PSD (random
//   directions and the eigenvalues of its dense matrix), the fixed part indefinite here;
//   the fused two-GEMM pass against the generic d²-value plan pass (sizes crossing the CPU tiles).
#include <gtest/gtest.h>

#include <Eigen/Dense>

#include "hvp_support.hpp"

namespace fs = flashsinkhorn;
using namespace testing_support;

namespace {

// n·d ≤ 80 keeps the dense Hessian (2·n·d tight solves) to a second or two.
const hvp_case kDenseCases[] = {
    {"23x17 d=3", 23, 17, 3, 1.0, 0.4},
    {"1x5 d=2", 1, 5, 2, 1.0, 0.3},
    {"16x70 d=5 s=0.5", 16, 70, 5, 0.5, 0.5},
    {"40x9 d=2 eps=0.15", 40, 9, 2, 1.0, 0.15},
};

hvp_problem make_case(const hvp_case& c) { return testing_support::make_case(c, 11, 29); }

class HvpVsDenseHessian : public ::testing::TestWithParam<std::tuple<int, bool>> {};

TEST_P(HvpVsDenseHessian, EveryColumn) {
  const auto [case_index, on_x] = GetParam();
  const hvp_case& c = kDenseCases[case_index];
  const hvp_problem p = make_case(c);
  fs::solver s(make_problem(p.x, p.y, p.eps, p.cost_scale), tight_fp64());
  ASSERT_TRUE(s.solve().converged) << c.name;
  const reference::cloud& side = on_x ? p.x : p.y;
  const std::vector<double> expected = dense_hessian(p, on_x);
  const std::vector<double> actual = hvp_matrix(s, side, on_x, tight_hvp());
  const double error = relative_max_error(actual, expected);
  std::cout << c.name << (on_x ? " X" : " Y") << ": max|H_hvp − H_fd|/max|H_fd| = " << error << "\n";
  EXPECT_LT(error, 1e-6) << c.name << (on_x ? " X" : " Y");
  // And a random direction (a dense combination of the columns).
  const std::vector<double> a = random_direction(side.count * side.dim, 5);
  fs::hvp_report report;
  const std::vector<double> ha = library_hvp(s, side, on_x, a, tight_hvp(), &report);
  std::vector<double> dense_ha(a.size(), 0.0);
  for (std::size_t r = 0; r < a.size(); ++r) {
    for (std::size_t k = 0; k < a.size(); ++k) dense_ha[r] += expected[r * a.size() + k] * a[k];
  }
  EXPECT_LT(relative_max_error(ha, dense_ha), 1e-6) << c.name;
  EXPECT_TRUE(report.converged) << c.name << " residual " << report.relative_residual;
  EXPECT_LT(std::abs(report.gauge_defect), 1e-12) << c.name;
  EXPECT_GT(report.plan_passes, 2 * report.cg_iterations) << c.name;
}

INSTANTIATE_TEST_SUITE_P(Cases, HvpVsDenseHessian, ::testing::Combine(::testing::Range(0, 4), ::testing::Bool()));

class HvpStructure : public ::testing::TestWithParam<bool> {};

TEST_P(HvpStructure, SymmetricAndPartsAddUp) {
  const bool on_x = GetParam();
  const hvp_problem p = make_case(kDenseCases[0]);
  fs::solver s(make_problem(p.x, p.y, p.eps, p.cost_scale), tight_fp64());
  s.solve();
  const reference::cloud& side = on_x ? p.x : p.y;
  const std::int64_t size = side.count * side.dim;
  for (std::uint64_t seed = 1; seed <= 3; ++seed) {
    const std::vector<double> a = random_direction(size, seed), b = random_direction(size, seed + 100);
    const std::vector<double> ha = library_hvp(s, side, on_x, a, tight_hvp());
    const std::vector<double> hb = library_hvp(s, side, on_x, b, tight_hvp());
    const double scale = std::sqrt(inner(ha, ha) * inner(b, b));
    EXPECT_NEAR(inner(b, ha), inner(a, hb), 1e-11 * scale) << "seed " << seed;

    const std::vector<double> fixed = library_hvp(s, side, on_x, a, tight_hvp(fs::hvp_part::fixed_potential));
    const std::vector<double> implicit = library_hvp(s, side, on_x, a, tight_hvp(fs::hvp_part::implicit));
    std::vector<double> sum(a.size());
    for (std::size_t i = 0; i < a.size(); ++i) sum[i] = fixed[i] + implicit[i];
    EXPECT_LT(relative_max_error(sum, ha), 1e-12) << "seed " << seed;
    // ⟨A, H_imp·A⟩ ≥ 0 (PSD part).
    EXPECT_GE(inner(a, implicit), -1e-12 * std::sqrt(inner(implicit, implicit) * inner(a, a))) << "seed " << seed;
  }
}

TEST_P(HvpStructure, ImplicitPartIsPsdAndFixedPartIsIndefinite) {
  const bool on_x = GetParam();
  const hvp_problem p = make_case(kDenseCases[3]);  // ε = 0.15: the frozen-potential curvature goes negative
  fs::solver s(make_problem(p.x, p.y, p.eps, p.cost_scale), tight_fp64());
  s.solve();
  const reference::cloud& side = on_x ? p.x : p.y;
  const auto size = static_cast<Eigen::Index>(side.count * side.dim);
  const auto eigenvalues = [&](fs::hvp_part part) {
    const std::vector<double> dense = hvp_matrix(s, side, on_x, tight_hvp(part));
    const Eigen::MatrixXd h = Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(
        dense.data(), size, size);
    EXPECT_LT((h - h.transpose()).cwiseAbs().maxCoeff(), 1e-11 * h.cwiseAbs().maxCoeff());
    return Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(0.5 * (h + h.transpose())).eigenvalues();
  };
  const Eigen::VectorXd implicit = eigenvalues(fs::hvp_part::implicit);
  EXPECT_GE(implicit.minCoeff(), -1e-11 * implicit.cwiseAbs().maxCoeff()) << "implicit part: λ_min " << implicit.minCoeff();
  const Eigen::VectorXd fixed = eigenvalues(fs::hvp_part::fixed_potential);
  EXPECT_LT(fixed.minCoeff(), 0) << "expected the fixed-potential part to be indefinite on this problem";
  EXPECT_GT(fixed.maxCoeff(), 0);
  const Eigen::VectorXd full = eigenvalues(fs::hvp_part::full);
  std::cout << (on_x ? "X" : "Y") << ": λ(H) in [" << full.minCoeff() << ", " << full.maxCoeff() << "], λ(H_fix) in ["
            << fixed.minCoeff() << ", " << fixed.maxCoeff() << "], λ(H_imp) in [" << implicit.minCoeff() << ", "
            << implicit.maxCoeff() << "]\n";
}

INSTANTIATE_TEST_SUITE_P(Sides, HvpStructure, ::testing::Bool());

// The fused quadratic pass (a second dot tile) and the generic one (d² values) are the same sum in
// a different order: agreement to fp64 roundoff, on sizes that cross the CPU backend's tiles
// (64 keys per panel, 6-row register blocks, 48-row groups).
class HvpTwoGemmPaths : public ::testing::TestWithParam<std::tuple<int, int, int, bool>> {};

TEST_P(HvpTwoGemmPaths, FusedEqualsGeneric) {
  const auto [n, m, d, on_x] = GetParam();
  const hvp_problem p{reference::random_cloud(n, d, 3, 1.0, 0.2), reference::random_cloud(m, d, 4, 1.0, -0.2), 0.5, 1.0};
  fs::solver s(make_problem(p.x, p.y, p.eps, p.cost_scale), tight_fp64());
  s.solve();
  const reference::cloud& side = on_x ? p.x : p.y;
  const std::vector<double> a = random_direction(side.count * side.dim, 9);
  for (fs::hvp_part part : {fs::hvp_part::fixed_potential, fs::hvp_part::full}) {
    const std::vector<double> fused = library_hvp(s, side, on_x, a, tight_hvp(part, fs::two_gemm_path::fused));
    const std::vector<double> generic = library_hvp(s, side, on_x, a, tight_hvp(part, fs::two_gemm_path::plan_pass));
    EXPECT_LT(relative_max_error(fused, generic), 1e-12) << describe(n, m, d, 3);
  }
}

INSTANTIATE_TEST_SUITE_P(Sizes, HvpTwoGemmPaths,
                         ::testing::Values(std::make_tuple(1, 1, 1, true), std::make_tuple(97, 65, 3, true),
                                           std::make_tuple(97, 65, 3, false), std::make_tuple(49, 130, 5, true),
                                           std::make_tuple(7, 200, 4, false)));

}  // namespace
