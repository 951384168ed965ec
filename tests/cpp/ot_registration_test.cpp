// Optimal-transport registration with Newton-CG on the streamed OT Hessian (issue 5): recover an
// affine map W (3 × 2, X̃ = [X, 1]) from unlabelled point clouds by minimising
//   L(W) = OT_ε(X̃W, Y),   Y = X̃W* (the same points, mapped; no correspondences given),
// with ∇_W L = X̃ᵀ∇_Z OT and ∇²_W L·V = X̃ᵀ H_Z (X̃V) (optim::linear_map_objective over
// solver::gradient_x and solver::hvp_x). What is checked:
//   - Newton-CG converges to ‖∇L‖ ≤ 1e-7 in few outer steps (5 measured, gradient norms 0.19,
//     1.3e-2, 1.1e-3, 5e-6, 3e-8: quadratic), with a superlinear tail;
//   - it is the minimiser: the dense 6 × 6 Hessian in W (six HVPs) there is positive definite, and
//     a second start far on the other side reaches the same W to 1e-7;
//   - a fact of the optimality conditions: Σ_i ∇_{z_i}OT = 2s(Σ a_i z_i − Σ b_j y_j) = 0 is the
//     translation's block of ∇_W L, so the mapped centroid equals Y's to the gradient tolerance;
//   - the entropic bias is moderate: W is within 6% of max|W*| at ε = 0.25 (measured 4.2%, 0.046).
// ε = 0.25 with s = 1 keeps every solve to 1e-13 within a few thousand iterations; at ε = 0.03 the
// marginal error of this configuration was still 5e-7 after 20,000, and Newton stalled on that noise.
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <cmath>
#include <iostream>
#include <memory>
#include <vector>

#include "flashsinkhorn/optim/linear_map_objective.hpp"
#include "flashsinkhorn/optim/newton_cg.hpp"
#include "hvp_support.hpp"

namespace {

using namespace testing_support;
namespace optim = flashsinkhorn::optim;

constexpr int kPoints = 60;
constexpr int kIn = 3;   // x, y, 1
constexpr int kOut = 2;  // mapped x, y
constexpr double kEps = 0.25;

struct registration {
  reference::cloud x;          // the moving points (kPoints, 2)
  reference::cloud y;          // X̃W*
  std::vector<double> design;  // X̃ (kPoints, 3) row-major
  std::vector<double> w_star;  // (3, 2): rotation 25° and scale 1.2 in the first two rows, translation last

  registration() : x(reference::random_cloud(kPoints, 2, 91, 1.0, 0.0, true)) {
    const double angle = 25.0 * M_PI / 180.0, scale = 1.2;
    w_star = {
        scale * std::cos(angle), scale * std::sin(angle), -scale * std::sin(angle), scale * std::cos(angle), 0.4, -0.3};
    design.resize(kPoints * kIn);
    for (int i = 0; i < kPoints; ++i) {
      design[i * kIn] = x.points[i * 2];
      design[i * kIn + 1] = x.points[i * 2 + 1];
      design[i * kIn + 2] = 1.0;
    }
    y = x;
    y.points = mapped(w_star);
  }

  [[nodiscard]] std::vector<double> mapped(const std::vector<double>& w) const {
    std::vector<double> z(kPoints * kOut, 0.0);
    for (int i = 0; i < kPoints; ++i)
      for (int c = 0; c < kOut; ++c)
        for (int k = 0; k < kIn; ++k) z[i * kOut + c] += design[i * kIn + k] * w[k * kOut + c];
    return z;
  }

  // OT_ε(Z, Y) as a loss of the points Z (p = kPoints·2): each solve starts from the potentials of
  // the previous one (the points move little between calls), and is kept for the HVPs at that point
  // (objective.hpp: hvp only comes at an accepted gradient point).
  [[nodiscard]] optim::objective points_loss() const {
    struct state {
      reference::cloud points;
      std::vector<double> f, g;  // the last solve's potentials, the next one's start
      std::unique_ptr<fs::solver> solver;
    };
    auto last = std::make_shared<state>();
    last->points = x;
    const reference::cloud target = y;
    optim::objective loss;
    loss.gradient = [last, target](optim::const_span z, optim::mutable_span gradient) {
      last->points.points.assign(z.begin(), z.end());
      fs::problem p = make_problem(last->points, target, kEps, 1.0);
      if (!last->f.empty()) {
        p.initial_f = fs::host_vector(last->f.data(), kPoints);
        p.initial_g = fs::host_vector(last->g.data(), kPoints);
      }
      last->solver = std::make_unique<fs::solver>(p, tight_fp64());
      const fs::result r = last->solver->solve();
      EXPECT_TRUE(r.converged) << r.marginal_error << " after " << r.iterations;
      last->f = r.f;
      last->g = r.g;
      last->solver->gradient_x(fs::host_matrix(gradient.data(), kPoints, kOut));
      return r.cost;
    };
    loss.hvp = [last](optim::const_span, optim::const_span v, optim::mutable_span product) {
      fs::hvp_options settings = tight_hvp();
      settings.tolerance = 1e-9;  // the products' error stays far below the gradients' (~1e-9)
      const fs::hvp_report report = last->solver->hvp_x(fs::host_matrix(v.data(), kPoints, kOut),
                                                        fs::host_matrix(product.data(), kPoints, kOut), settings);
      EXPECT_TRUE(report.converged) << report.relative_residual;
    };
    return loss;
  }

  [[nodiscard]] optim::objective in_w() const {
    return optim::linear_map_objective(points_loss(), design, kPoints, kIn, kOut);
  }
};

optim::optimizer_result register_from(const registration& problem, std::vector<double> w0) {
  optim::newton_cg_options options;
  options.gradient_tolerance = 1e-7;
  options.max_iterations = 30;
  options.on_iteration = [](const optim::optimizer_iteration& it) {
    std::cout << "[ newton " << it.iteration << " ] L " << it.value << ", |grad| " << it.gradient_norm << ", CG "
              << it.cg_iterations << ", step " << it.step_size << "\n";
  };
  return optim::newton_cg(problem.in_w(), std::move(w0), options);
}

TEST(OtRegistration, NewtonCgRecoversAnAffineMap) {
  const registration problem;
  std::vector<double> w0 = problem.w_star, w1 = problem.w_star;
  const std::vector<double> push = {0.15, -0.1, 0.12, 0.08, -0.3, 0.25};
  for (std::size_t e = 0; e < w0.size(); ++e) {
    w0[e] += push[e];
    w1[e] -= push[e];
  }
  const optim::optimizer_result first = register_from(problem, w0);
  ASSERT_EQ(first.status, optim::optimizer_status::converged) << optim::to_string(first.status);
  EXPECT_LE(first.iterations, 12);
  // Superlinear tail: the last step cuts the gradient by far more than a linear rate would.
  const auto& history = first.history;
  ASSERT_GE(history.size(), 3u);
  EXPECT_LT(history.back().gradient_norm, 1e-3 * history[history.size() - 3].gradient_norm);

  const optim::optimizer_result second = register_from(problem, w1);
  ASSERT_EQ(second.status, optim::optimizer_status::converged) << optim::to_string(second.status);
  double apart = 0, off = 0, size = 0;
  for (std::size_t e = 0; e < first.theta.size(); ++e) {
    apart = std::max(apart, std::abs(first.theta[e] - second.theta[e]));
    off = std::max(off, std::abs(first.theta[e] - problem.w_star[e]));
    size = std::max(size, std::abs(problem.w_star[e]));
  }
  std::cout << "[ registration ] max|W − W*| " << off << ", max|W₁ − W₂| " << apart << "\n";
  EXPECT_LT(apart, 1e-7) << "two starts, one minimiser";
  EXPECT_LT(off, 0.06 * size) << "the entropic bias at ε = 0.25";

  // The centroids match (translation block of ∇_W L = 0).
  const std::vector<double> z = problem.mapped(first.theta);
  for (int c = 0; c < kOut; ++c) {
    double mz = 0, my = 0;
    for (int i = 0; i < kPoints; ++i) {
      mz += z[i * kOut + c] / kPoints;
      my += problem.y.points[i * kOut + c] / kPoints;
    }
    EXPECT_NEAR(mz, my, 1e-8) << "centroid, coordinate " << c;
  }

  // Positive-definite Hessian in W at the solution: the columns H·e_k, symmetrised.
  const optim::objective f = problem.in_w();
  std::vector<double> gradient(first.theta.size());
  f.gradient(first.theta, gradient);
  Eigen::MatrixXd hessian(kIn * kOut, kIn * kOut);
  for (int k = 0; k < kIn * kOut; ++k) {
    std::vector<double> e(kIn * kOut, 0.0), column(kIn * kOut);
    e[k] = 1;
    f.hvp(first.theta, e, column);
    for (int r = 0; r < kIn * kOut; ++r) hessian(r, k) = column[r];
  }
  EXPECT_LT((hessian - hessian.transpose()).norm(), 1e-7 * hessian.norm()) << "symmetry";
  const Eigen::VectorXd eigenvalues =
      Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(0.5 * (hessian + hessian.transpose())).eigenvalues();
  std::cout << "[ registration ] Hessian eigenvalues " << eigenvalues.transpose() << "\n";
  EXPECT_GT(eigenvalues.minCoeff(), 1e-3 * eigenvalues.maxCoeff()) << "a strict minimum";
}

}  // namespace
