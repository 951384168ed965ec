// The dense model of trust_region_options::dense_model_dimension: the exact subproblem step against
// the Moré–Sorensen optimality conditions (a math fact, independent of how the step is computed),
// the hard case and the Newton step in closed form, the symmetrised Hessian, and the trust region
// and the hybrid with it (products counted: p per iterate, none for a rejected step or after a check).
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <cmath>
#include <iostream>
#include <random>
#include <vector>

#include "flashsinkhorn/error.hpp"
#include "optim/dense_check.hpp"
#include "optim/dense_model.hpp"
#include "optim/trust_region_exact.hpp"
#include "optim_test_functions.hpp"

namespace {

namespace detail = flashsinkhorn::optim::detail;
using flashsinkhorn::optim::hybrid;
using flashsinkhorn::optim::hybrid_options;
using flashsinkhorn::optim::hybrid_result;
using flashsinkhorn::optim::optimizer_result;
using flashsinkhorn::optim::optimizer_status;
using flashsinkhorn::optim::trust_region;
using flashsinkhorn::optim::trust_region_options;
using optim_testing::dense_symmetric;

detail::dense_model model_of(const dense_symmetric& a) { return detail::dense_model_of(a.values, a.size, "test"); }

double model_value(const dense_symmetric& a, const std::vector<double>& g, const std::vector<double>& s) {
  std::vector<double> as(s.size());
  a.apply(s, as);
  double m = 0;
  for (std::size_t i = 0; i < s.size(); ++i) m += g[i] * s[i] + 0.5 * s[i] * as[i];
  return m;
}

double norm(const std::vector<double>& x) { return std::sqrt(detail::dot(x, x)); }

// Moré–Sorensen: s solves min m(s), ‖s‖ ≤ Δ, iff for some σ ≥ 0: (H + σI)s = −g, σ(Δ − ‖s‖) = 0,
// H + σI ⪰ 0. Checked on indefinite and definite H, radii from inside the Newton step to far outside.
TEST(DenseModel, ExactStepMeetsTheOptimalityConditions) {
  std::mt19937_64 rng(5);
  std::normal_distribution<double> normal(0, 1);
  int boundary = 0, interior = 0;
  for (int trial = 0; trial < 60; ++trial) {
    const int p = 2 + trial % 9;
    const dense_symmetric a = trial % 2 == 0 ? optim_testing::random_symmetric(p, 100 + trial)
                                             : optim_testing::random_spd(p, 0.05, 200 + trial);
    std::vector<double> g(static_cast<std::size_t>(p));
    for (auto& e : g) e = normal(rng);
    const double radius = std::pow(10.0, -1.5 + 0.1 * trial);
    const detail::dense_model model = model_of(a);
    std::vector<double> s(g.size());
    const detail::exact_step_outcome out = detail::exact_trust_region_step(model, g, radius, s);

    EXPECT_GE(out.shift, 0);
    EXPECT_LE(norm(s), radius * (1 + 1e-12));
    std::vector<double> residual(g.size());
    a.apply(s, residual);
    for (std::size_t i = 0; i < g.size(); ++i) residual[i] += out.shift * s[i] + g[i];
    EXPECT_LE(norm(residual), 1e-9 * (norm(g) + 1)) << "trial " << trial;
    EXPECT_GE(model.lambda_min() + out.shift, -1e-12) << "trial " << trial;
    EXPECT_LE(out.shift * (radius - norm(s)), 1e-9 * radius * (out.shift + 1)) << "trial " << trial;
    EXPECT_NEAR(out.model_decrease, -model_value(a, g, s), 1e-10 * (1 + std::fabs(out.model_decrease)));
    EXPECT_EQ(out.negative_curvature, model.lambda_min() <= 0);
    // and no random feasible point does better
    for (int k = 0; k < 20; ++k) {
      std::vector<double> z(g.size());
      for (auto& e : z) e = normal(rng);
      const double scale = radius * std::pow(std::uniform_real_distribution<double>(0, 1)(rng), 0.5) / norm(z);
      for (auto& e : z) e *= scale;
      EXPECT_LE(model_value(a, g, s), model_value(a, g, z) + 1e-12);
    }
    (out.on_boundary ? boundary : interior) += 1;
  }
  EXPECT_GT(boundary, 10);
  EXPECT_GT(interior, 5);
}

// Definite H, Δ beyond the Newton step: σ = 0, s = −H⁻¹g.
TEST(DenseModel, InteriorStepIsNewtons) {
  const dense_symmetric a = optim_testing::random_spd(6, 0.5, 3);
  const std::vector<double> g{1, -2, 0.5, 0, 3, -1};
  std::vector<double> s(6);
  const detail::exact_step_outcome out = detail::exact_trust_region_step(model_of(a), g, 1e6, s);
  EXPECT_FALSE(out.on_boundary);
  EXPECT_EQ(out.shift, 0);
  const Eigen::Map<const Eigen::Matrix<double, 6, 6, Eigen::RowMajor>> m(a.values.data());
  const Eigen::VectorXd newton = -Eigen::Matrix<double, 6, 6>(m).ldlt().solve(Eigen::Map<const Eigen::VectorXd>(g.data(), 6));
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(s[static_cast<std::size_t>(i)], newton(i), 1e-12);
}

// The hard case: H = diag(−1, 2, 3), g = (0, 1, 1) has no part along e₁, and s(σ = 1) =
// (0, −1/3, −1/4) is inside Δ = 5: the step is that plus τe₁ with ‖s‖ = 5.
TEST(DenseModel, HardCaseStepsAlongTheBottomEigenvector) {
  const dense_symmetric a{3, {-1, 0, 0, 0, 2, 0, 0, 0, 3}};
  const std::vector<double> g{0, 1, 1};
  std::vector<double> s(3);
  const detail::exact_step_outcome out = detail::exact_trust_region_step(model_of(a), g, 5, s);
  EXPECT_TRUE(out.on_boundary);
  EXPECT_TRUE(out.negative_curvature);
  EXPECT_NEAR(out.shift, 1, 1e-15);
  EXPECT_NEAR(s[1], -1.0 / 3, 1e-15);
  EXPECT_NEAR(s[2], -1.0 / 4, 1e-15);
  EXPECT_NEAR(std::fabs(s[0]), std::sqrt(25 - 1.0 / 9 - 1.0 / 16), 1e-12);
  EXPECT_NEAR(norm(s), 5, 1e-12);
  // zero gradient at a saddle: a step of length Δ along the negative-curvature direction
  std::vector<double> zero(3, 0.0);
  const detail::exact_step_outcome at_saddle = detail::exact_trust_region_step(model_of(a), zero, 0.5, s);
  EXPECT_NEAR(std::fabs(s[0]), 0.5, 1e-15);
  EXPECT_EQ(s[1], 0);
  EXPECT_NEAR(at_saddle.model_decrease, 0.125, 1e-15);
}

// Formed by p products with the unit vectors and symmetrised: an operator A + E with E
// antisymmetric (the error of an inexact product) gives A.
TEST(DenseModel, FormedFromProductsAndSymmetrised) {
  const dense_symmetric a = optim_testing::random_symmetric(5, 11);
  int products = 0;
  const detail::hessian_product product = [&](optim_testing::const_span v, optim_testing::mutable_span out) {
    ++products;
    a.apply(v, out);
    for (int i = 0; i < 5; ++i)
      for (int j = 0; j < 5; ++j) out[static_cast<std::size_t>(i)] += 1e-3 * (i - j) * v[static_cast<std::size_t>(j)];
  };
  const detail::dense_model model = detail::form_dense_model(product, 5);
  EXPECT_EQ(products, 5);
  for (std::size_t k = 0; k < a.values.size(); ++k) EXPECT_NEAR(model.hessian[k], a.values[k], 1e-15);
  const Eigen::Map<const Eigen::Matrix<double, 5, 5, Eigen::RowMajor>> m(a.values.data());
  const Eigen::SelfAdjointEigenSolver<Eigen::Matrix<double, 5, 5>> exact{Eigen::Matrix<double, 5, 5>(m)};
  EXPECT_NEAR(model.lambda_min(), exact.eigenvalues()(0), 1e-12);
  EXPECT_THROW((void)detail::dense_model_of({1, 2, 3}, 2, "trust_region_options.initial_hessian"),
               flashsinkhorn::invalid_argument);
}

// The trust region with the dense model: a quadratic in one step of p products.
TEST(DenseModelTrustRegion, QuadraticInOneStepOfPProducts) {
  const dense_symmetric a = optim_testing::random_spd(30, 0.1, 9);
  std::vector<double> b(30);
  for (int i = 0; i < 30; ++i) b[static_cast<std::size_t>(i)] = std::cos(0.5 + i);
  trust_region_options options;
  options.initial_radius = options.max_radius = 1e3;
  options.gradient_tolerance = 1e-9;
  options.dense_model_dimension = 30;
  const optimizer_result r = trust_region(optim_testing::quadratic(a, b), std::vector<double>(30, 0.0), options);
  EXPECT_EQ(r.status, optimizer_status::converged);
  EXPECT_EQ(r.iterations, 1);
  EXPECT_EQ(r.evaluations.hvps, 30);
  options.dense_model_dimension = 29;  // p above it: Steihaug–Toint CG, as before
  options.forcing.initial = options.forcing.maximum = 1e-12;
  const optimizer_result cg = trust_region(optim_testing::quadratic(a, b), std::vector<double>(30, 0.0), options);
  EXPECT_EQ(cg.iterations, 1);
  EXPECT_NE(cg.evaluations.hvps, 30);
}

// Rosenbrock (rejected steps) and the saddle: converged, p products at each new iterate and none
// after a rejection; from the saddle the first step is the boundary step of negative curvature.
TEST(DenseModelTrustRegion, RosenbrockAndSaddleWithProductsCounted) {
  for (const int p : {2, 10}) {
    trust_region_options options;
    options.dense_model_dimension = p;
    const optimizer_result r =
        trust_region(optim_testing::extended_rosenbrock(), optim_testing::rosenbrock_start(p), options);
    EXPECT_EQ(r.status, optimizer_status::converged);
    EXPECT_LT(optim_testing::max_abs_difference(r.theta, 1), 1e-8);
    int products = 0, rejected = 0;
    bool fresh = true;  // the first iteration at an iterate forms its model
    for (const auto& step : r.history) {
      EXPECT_EQ(step.cg_iterations, fresh ? p : 0) << "iteration " << step.iteration;
      products += step.cg_iterations;
      rejected += step.accepted ? 0 : 1;
      fresh = step.accepted;
    }
    EXPECT_EQ(products, r.evaluations.hvps);
    EXPECT_GT(rejected, 0) << "p = " << p;  // the test must see a reuse
    trust_region_options steihaug;
    const optimizer_result cg =
        trust_region(optim_testing::extended_rosenbrock(), optim_testing::rosenbrock_start(p), steihaug);
    std::cout << "[ trust region ] extended Rosenbrock p = " << p << ": dense model " << r.iterations << " iterations ("
              << rejected << " rejected), " << r.evaluations.hvps << " HVPs; Steihaug–Toint " << cg.iterations
              << " iterations, " << cg.evaluations.hvps << " HVPs\n";
  }
  trust_region_options options;
  options.initial_radius = 0.5;
  options.dense_model_dimension = 2;
  const optimizer_result r = trust_region(optim_testing::saddle(), {1e-8, 1e-6}, options);
  EXPECT_EQ(r.status, optimizer_status::converged);
  EXPECT_TRUE(r.history.at(0).negative_curvature);
  EXPECT_NEAR(r.history.at(0).step_norm, 0.5, 1e-12);
  EXPECT_NEAR(r.value, -1, 1e-12);
}

// A given ∇²f(θ₀) serves the first iteration: no product there. A wrong size names the field.
TEST(DenseModelTrustRegion, InitialHessianSavesTheFirstProducts) {
  trust_region_options options;
  options.dense_model_dimension = 2;
  options.initial_radius = 0.5;
  options.initial_hessian = {2, 0, 0, -2};  // ∇²f at the saddle
  const optimizer_result r = trust_region(optim_testing::saddle(), {1e-8, 1e-6}, options);
  EXPECT_EQ(r.status, optimizer_status::converged);
  EXPECT_EQ(r.history.at(0).cg_iterations, 0);
  EXPECT_NEAR(r.value, -1, 1e-12);
  options.initial_hessian = {2, 0, 0};
  try {
    (void)trust_region(optim_testing::saddle(), {1e-8, 1e-6}, options);
    FAIL() << "no error";
  } catch (const flashsinkhorn::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("initial_hessian"), std::string::npos) << e.what();
  }
  options.initial_hessian.clear();
  options.dense_model_dimension = -1;
  EXPECT_THROW((void)trust_region(optim_testing::saddle(), {1e-8, 1e-6}, options), flashsinkhorn::invalid_argument);
}

// The hybrid with the dense model: a check in clearly negative curvature certified by one or two
// Lanczos products (its Ritz value bounds λ_min from above), the others exact (p products, residual
// 0), the switch check's Hessian reused by the trust region's first step, the same end point.
TEST(DenseModelHybrid, CheapNegativeChecksExactOthersAndTheSwitchHessianReused) {
  hybrid_options options = optim_testing::saddle_hybrid_options();
  options.trust_region.dense_model_dimension = 2;
  const hybrid_result r = hybrid(optim_testing::saddle(), {0.5, 1e-3}, options);
  ASSERT_GE(r.lambda_trace.size(), 2u);
  int products = 0;
  for (const auto& sample : r.lambda_trace) {
    products += sample.lanczos_steps;
    if (sample.certified_negative && !sample.converged) {  // certified early
      EXPECT_LE(sample.lanczos_steps, 2);
      EXPECT_LT(sample.lambda_min, -options.negative_tolerance);
    } else {
      EXPECT_EQ(sample.lanczos_steps, 2);
      EXPECT_EQ(sample.residual, 0);
      EXPECT_TRUE(sample.converged);
    }
  }
  // at (0.5, 1e-3) ∇²f = diag(2, 3e-6 − 2): the first check certifies λ_min < 0 with a Ritz value ≥ λ_min
  EXPECT_TRUE(r.lambda_trace.front().certified_negative);
  EXPECT_GE(r.lambda_trace.front().lambda_min, 3e-6 - 2 - 1e-12);
  EXPECT_NEAR(r.lambda_trace.back().lambda_min, 3 * std::pow(r.adam_phase.theta[1], 2) - 2, 1e-12);  // exact
  EXPECT_GT(r.lambda_trace.back().lambda_min, 0);
  EXPECT_EQ(r.status, optimizer_status::converged);
  EXPECT_NEAR(r.theta[1], std::sqrt(2.0), 1e-8);
  const auto& history = r.second_order_phase.history;
  ASSERT_FALSE(history.empty());
  EXPECT_EQ(history.front().cg_iterations, 0);  // the switch check's Hessian
  int trust_products = 0;
  for (const auto& step : history) trust_products += step.cg_iterations;
  EXPECT_EQ(r.second_order_phase.evaluations.hvps, trust_products);
  EXPECT_EQ(r.evaluations.hvps, products + trust_products);
}

// The dense check itself: on diag(−3, 1, 2, 5) from a start with a part along e₁ one product
// certifies (α₁ < −τ); on a definite matrix it forms the Hessian in the basis its two Lanczos steps
// began — p products in all, the exact λ_min and matrix.
TEST(DenseModel, CheckCertifiesCheaplyOrFormsTheHessianInItsLanczosBasis) {
  int products = 0;
  const dense_symmetric negative{4, {-3, 0, 0, 0, 0, 1, 0, 0, 0, 0, 2, 0, 0, 0, 0, 5}};
  const auto counting = [&products](const dense_symmetric& a) {
    return detail::hessian_product([&products, a](optim_testing::const_span v, optim_testing::mutable_span out) {
      ++products;
      a.apply(v, out);
    });
  };
  const detail::dense_check_outcome certified = detail::dense_check(counting(negative), {0.8, 0.6, 0, 0}, 0.05);
  EXPECT_TRUE(certified.certified_negative);
  EXPECT_EQ(certified.products, 1);
  EXPECT_EQ(products, 1);
  EXPECT_NEAR(certified.lambda_min, 0.64 * -3 + 0.36 * 1, 1e-15);
  EXPECT_TRUE(certified.model.empty());

  products = 0;
  const dense_symmetric definite = optim_testing::random_spd(6, 0.3, 21);
  const detail::dense_check_outcome exact = detail::dense_check(counting(definite), {0.5, 0.5, 0.5, 0.5, 0, 0}, 0.05);
  EXPECT_FALSE(exact.certified_negative);
  EXPECT_EQ(exact.products, 6);
  EXPECT_EQ(products, 6);
  for (std::size_t k = 0; k < definite.values.size(); ++k) EXPECT_NEAR(exact.model.hessian[k], definite.values[k], 1e-12);
  EXPECT_NEAR(exact.lambda_min, model_of(definite).lambda_min(), 1e-12);
  EXPECT_EQ(exact.residual, 0);
}

}  // namespace
