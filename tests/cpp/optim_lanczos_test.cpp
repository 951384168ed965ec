// Lanczos extreme eigenvalues against Eigen's dense SelfAdjointEigenSolver.
#include <gtest/gtest.h>

#include <Eigen/Eigenvalues>
#include <cmath>

#include "flashsinkhorn/error.hpp"
#include "optim_test_functions.hpp"

namespace {

using flashsinkhorn::optim::lanczos_extremes;
using flashsinkhorn::optim::lanczos_options;
using flashsinkhorn::optim::lanczos_result;
using flashsinkhorn::optim::lanczos_target;
using optim_testing::dense_symmetric;

Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> dense_eigen(const dense_symmetric& a) {
  const Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>> m(a.values.data(),
                                                                                                a.size, a.size);
  return Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(Eigen::MatrixXd(m));
}

lanczos_result run(const dense_symmetric& a, const lanczos_options& options) {
  return lanczos_extremes([&a](auto x, auto y) { a.apply(x, y); }, a.size, options);
}

// ‖A y − θ y‖₂ for the returned Ritz vector.
double ritz_residual(const dense_symmetric& a, const lanczos_result& r) {
  std::vector<double> ay(r.ritz_vector_min.size());
  a.apply(r.ritz_vector_min, ay);
  double sum = 0;
  for (std::size_t i = 0; i < ay.size(); ++i) {
    const double e = ay[i] - r.lambda_min * r.ritz_vector_min[i];
    sum += e * e;
  }
  return std::sqrt(sum);
}

double norm(const std::vector<double>& v) {
  double sum = 0;
  for (double vi : v) sum += vi * vi;
  return std::sqrt(sum);
}

class LanczosRandom : public ::testing::TestWithParam<int> {};

// Indefinite Wigner matrices of sizes 1, 2, odd and past 64: both extremes to 1e-8, the Ritz vector
// a unit vector whose residual is the reported bound.
TEST_P(LanczosRandom, ExtremesMatchDenseEigensolver) {
  const int size = GetParam();
  for (std::uint64_t seed = 1; seed <= 3; ++seed) {
    SCOPED_TRACE(::testing::Message() << "size " << size << " seed " << seed);
    const dense_symmetric a = optim_testing::random_symmetric(size, seed);
    lanczos_options options;
    options.max_steps = size;
    options.seed = seed + 100;
    const lanczos_result r = run(a, options);
    const auto eigen = dense_eigen(a);
    EXPECT_NEAR(r.lambda_min, eigen.eigenvalues()(0), 1e-8);
    EXPECT_NEAR(r.lambda_max, eigen.eigenvalues()(size - 1), 1e-8);
    EXPECT_TRUE(r.converged);
    EXPECT_LE(r.steps, size);
    EXPECT_NEAR(norm(r.ritz_vector_min), 1, 1e-12);
    EXPECT_LE(ritz_residual(a, r), r.residual_min + 1e-12);
  }
}

INSTANTIATE_TEST_SUITE_P(Sizes, LanczosRandom, ::testing::Values(1, 2, 7, 50, 97));

// Spectrum with separated extremes: converged long before k = p; eigenvalues to 1e-8, the Ritz vector
// parallel to the eigenvector of λ_min.
TEST(Lanczos, SeparatedExtremesConvergeEarly) {
  const int size = 400;
  const dense_symmetric noise = optim_testing::random_symmetric(size, 7);  // spectrum ≈ [−2, 2]
  dense_symmetric a = noise;
  // −4e₀e₀ᵀ + 6e₁e₁ᵀ: outliers near −4.25 and 6.17 (θ + 1/θ for a Wigner matrix), far from the bulk.
  a.values[0] -= 4;
  a.values[static_cast<std::size_t>(size + 1)] += 6;
  lanczos_options options;
  options.max_steps = 200;
  const lanczos_result r = run(a, options);
  const auto eigen = dense_eigen(a);
  EXPECT_NEAR(r.lambda_min, eigen.eigenvalues()(0), 1e-8);
  EXPECT_NEAR(r.lambda_max, eigen.eigenvalues()(size - 1), 1e-8);
  EXPECT_TRUE(r.converged);
  EXPECT_LT(r.steps, 100) << "steps " << r.steps;
  const Eigen::VectorXd v = eigen.eigenvectors().col(0);
  double cosine = 0;
  for (int i = 0; i < size; ++i) cosine += v(i) * r.ritz_vector_min[static_cast<std::size_t>(i)];
  EXPECT_NEAR(std::fabs(cosine), 1, 1e-8);
  std::cout << "[ lanczos ] p = 400, separated extremes: " << r.steps << " steps, residual bounds "
            << r.residual_min << ", " << r.residual_max << "\n";
}

// Positive definite: λ_min > 0 with only the smallest targeted.
TEST(Lanczos, SmallestOfPositiveDefinite) {
  const dense_symmetric a = optim_testing::random_spd(60, 0.5, 3);
  lanczos_options options;
  options.target = lanczos_target::smallest;
  const lanczos_result r = run(a, options);
  EXPECT_NEAR(r.lambda_min, dense_eigen(a).eigenvalues()(0), 1e-8);
  EXPECT_GT(r.lambda_min, 0);
}

// stop_below: ends as soon as a Ritz value certifies λ_min < stop_below; the estimate is an upper
// bound of λ_min (interlacing).
TEST(Lanczos, StopBelowCertifiesNegativeCurvature) {
  dense_symmetric a = optim_testing::random_symmetric(200, 11);
  a.values[0] -= 5;  // λ_min ≈ −5
  lanczos_options options;
  options.stop_below = -0.5;
  options.target = lanczos_target::smallest;
  const lanczos_result r = run(a, options);
  const double lambda_min = dense_eigen(a).eigenvalues()(0);
  EXPECT_TRUE(r.stopped_below);
  EXPECT_LT(r.lambda_min, -0.5);
  EXPECT_GE(r.lambda_min, lambda_min - 1e-12);
  EXPECT_LT(r.steps, 20) << "steps " << r.steps;
}

// A start vector inside an invariant subspace: one step, the exact eigenvalue of that subspace —
// reported, not hidden (the extremes of A are not found from such a start).
TEST(Lanczos, InvariantStartIsReported) {
  dense_symmetric a{3, {1, 0, 0, 0, -2, 0, 0, 0, 5}};
  lanczos_options options;
  options.start = {1, 0, 0};
  const lanczos_result r = run(a, options);
  EXPECT_EQ(r.steps, 1);
  EXPECT_TRUE(r.invariant_subspace);
  EXPECT_DOUBLE_EQ(r.lambda_min, 1);
}

// The same start with start_noise leaves the invariant subspace and finds both extremes (p = 3 steps).
TEST(Lanczos, StartNoiseLeavesAnInvariantStart) {
  dense_symmetric a{3, {1, 0, 0, 0, -2, 0, 0, 0, 5}};
  lanczos_options options;
  options.start = {1, 0, 0};
  options.start_noise = 1e-2;
  const lanczos_result r = run(a, options);
  EXPECT_EQ(r.steps, 3);
  EXPECT_NEAR(r.lambda_min, -2, 1e-10);
  EXPECT_NEAR(r.lambda_max, 5, 1e-10);
  options.start_noise = -1;
  EXPECT_THROW(run(a, options), flashsinkhorn::invalid_argument);
}

}  // namespace
