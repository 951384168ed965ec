// Point-cloud registration through linear_map_objective: the shape in which the OT Hessian-vector
// product will be used (a loss of the points Z = X̃W with its gradient and HVP w.r.t. the points,
// pulled back to the map W by the chain rule). Here the loss has known correspondences,
//   ℓ(Z) = Σ_i (c²/2)·log(1 + ‖z_i − y_i‖²/c²)   (Cauchy / Lorentzian, c = 1),
// whose Hessian block per point, I/(1 + s/c²) − 2rrᵀ/(c²(1 + s/c²)²) (r = z_i − y_i, s = ‖r‖²), is
// indefinite for ‖r‖ > c: far from the solution the problem in W is non-convex. Y = X̃W* exactly for
// an affine map W* (X̃ = [X, 1]), so W* is the global minimiser with ℓ = 0.
#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <random>

#include "optim_test_functions.hpp"

namespace {

using flashsinkhorn::optim::const_span;
using flashsinkhorn::optim::linear_map_objective;
using flashsinkhorn::optim::mutable_span;
using flashsinkhorn::optim::newton_cg;
using flashsinkhorn::optim::objective;
using flashsinkhorn::optim::optimizer_result;
using flashsinkhorn::optim::optimizer_status;
using flashsinkhorn::optim::trust_region;

constexpr int kPoints = 200;
constexpr int kDim = 3;
constexpr int kDesignCols = kDim + 1;  // homogeneous coordinate for the translation

// Lorentzian loss of points (n × d row-major) against fixed targets.
objective lorentzian_points_loss(std::vector<double> targets, int dim) {
  const auto d = static_cast<std::size_t>(dim);
  objective f;
  f.value = [targets, d](const_span z) {
    double value = 0;
    for (std::size_t i = 0; i < z.size(); i += d) {
      double s = 0;
      for (std::size_t c = 0; c < d; ++c) s += (z[i + c] - targets[i + c]) * (z[i + c] - targets[i + c]);
      value += 0.5 * std::log1p(s);
    }
    return value;
  };
  f.gradient = [targets, d](const_span z, mutable_span g) {
    double value = 0;
    for (std::size_t i = 0; i < z.size(); i += d) {
      double s = 0;
      for (std::size_t c = 0; c < d; ++c) s += (z[i + c] - targets[i + c]) * (z[i + c] - targets[i + c]);
      value += 0.5 * std::log1p(s);
      for (std::size_t c = 0; c < d; ++c) g[i + c] = (z[i + c] - targets[i + c]) / (1 + s);
    }
    return value;
  };
  f.hvp = [targets, d](const_span z, const_span v, mutable_span hv) {
    for (std::size_t i = 0; i < z.size(); i += d) {
      double s = 0, rv = 0;
      for (std::size_t c = 0; c < d; ++c) {
        const double r = z[i + c] - targets[i + c];
        s += r * r;
        rv += r * v[i + c];
      }
      for (std::size_t c = 0; c < d; ++c) {
        const double r = z[i + c] - targets[i + c];
        hv[i + c] = v[i + c] / (1 + s) - 2 * r * rv / ((1 + s) * (1 + s));
      }
    }
  };
  return f;
}

struct registration_case {
  std::vector<double> design;      // X̃ (n × (d+1))
  std::vector<double> true_map;    // W* ((d+1) × d): linear part rows 0..d−1, translation row d
  objective loss_of_map;
};

registration_case make_registration(std::uint64_t seed) {
  std::mt19937_64 generator(seed);
  std::normal_distribution<double> normal;
  registration_case rc;
  rc.design.resize(kPoints * kDesignCols);
  for (int i = 0; i < kPoints; ++i) {
    for (int c = 0; c < kDim; ++c) rc.design[static_cast<std::size_t>(i * kDesignCols + c)] = normal(generator);
    rc.design[static_cast<std::size_t>(i * kDesignCols + kDim)] = 1;
  }
  rc.true_map.resize(kDesignCols * kDim);
  for (int k = 0; k < kDesignCols; ++k) {
    for (int c = 0; c < kDim; ++c) {
      const double identity = k == c ? 1.0 : 0.0;
      rc.true_map[static_cast<std::size_t>(k * kDim + c)] = k < kDim ? identity + 0.3 * normal(generator)
                                                                      : 2 * normal(generator);
    }
  }
  std::vector<double> targets(kPoints * kDim, 0.0);
  for (int i = 0; i < kPoints; ++i) {
    for (int k = 0; k < kDesignCols; ++k) {
      for (int c = 0; c < kDim; ++c) {
        targets[static_cast<std::size_t>(i * kDim + c)] +=
            rc.design[static_cast<std::size_t>(i * kDesignCols + k)] * rc.true_map[static_cast<std::size_t>(k * kDim + c)];
      }
    }
  }
  rc.loss_of_map = linear_map_objective(lorentzian_points_loss(targets, kDim), rc.design, kPoints, kDesignCols, kDim);
  return rc;
}

// The chain rule of linear_map_objective against central differences of its own value and gradient.
TEST(LinearMapObjective, GradientAndHvpMatchFiniteDifferences) {
  const registration_case rc = make_registration(3);
  const std::size_t p = rc.true_map.size();
  std::vector<double> w(p), v(p);
  for (std::size_t k = 0; k < p; ++k) {
    w[k] = 0.5 * std::sin(1.0 + static_cast<double>(k));
    v[k] = std::cos(2.0 + static_cast<double>(k));
  }
  std::vector<double> gradient(p), plus(p), minus(p), g_plus(p), g_minus(p), hv(p);
  rc.loss_of_map.gradient(w, gradient);
  rc.loss_of_map.hvp(w, v, hv);
  const double h = 1e-5;
  for (std::size_t k = 0; k < p; ++k) {
    plus[k] = w[k] + h * v[k];
    minus[k] = w[k] - h * v[k];
  }
  const double directional = (rc.loss_of_map.value(plus) - rc.loss_of_map.value(minus)) / (2 * h);
  double gv = 0;
  for (std::size_t k = 0; k < p; ++k) gv += gradient[k] * v[k];
  EXPECT_NEAR(gv, directional, 1e-6 * std::fabs(gv) + 1e-8);
  rc.loss_of_map.gradient(plus, g_plus);
  rc.loss_of_map.gradient(minus, g_minus);
  for (std::size_t k = 0; k < p; ++k) {
    EXPECT_NEAR(hv[k], (g_plus[k] - g_minus[k]) / (2 * h), 1e-6 * (std::fabs(hv[k]) + 1)) << "entry " << k;
  }
}

void expect_map_recovered(const optimizer_result& r, const registration_case& rc, const char* method) {
  EXPECT_EQ(r.status, optimizer_status::converged) << method;
  double error = 0;
  for (std::size_t k = 0; k < rc.true_map.size(); ++k) error = std::fmax(error, std::fabs(r.theta[k] - rc.true_map[k]));
  EXPECT_LT(error, 1e-7) << method;
  int negative = 0;
  for (const auto& step : r.history) negative += step.negative_curvature ? 1 : 0;
  std::cout << "[ registration ] " << method << ": affine map (p = 12) from W = 0 in " << r.iterations
            << " iterations (" << negative << " with negative curvature), " << r.evaluations.hvps
            << " HVPs, max|W − W*| = " << error << "\n";
}

TEST(Registration, AffineMapRecoveredByNewtonCg) {
  const registration_case rc = make_registration(1);
  const optimizer_result r = newton_cg(rc.loss_of_map, std::vector<double>(rc.true_map.size(), 0.0));
  expect_map_recovered(r, rc, "Newton-CG");
}

TEST(Registration, AffineMapRecoveredByTrustRegion) {
  const registration_case rc = make_registration(1);
  const optimizer_result r = trust_region(rc.loss_of_map, std::vector<double>(rc.true_map.size(), 0.0));
  expect_map_recovered(r, rc, "trust region");
}

}  // namespace
