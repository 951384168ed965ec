// The C++ example of docs/optimizers.md, compiled and run: fit a linear map W by Newton-CG through
// linear_map_objective, then check the Hessian at the solution with Lanczos.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "flashsinkhorn/flashsinkhorn.hpp"

namespace {

TEST(OptimUsage, DocsExample) {
  namespace optim = flashsinkhorn::optim;
  const int n = 50, d_in = 2, d_out = 2;
  std::vector<double> x(n * d_in), y(n * d_out);
  for (int i = 0; i < n; ++i) {
    x[2 * i] = std::cos(i), x[2 * i + 1] = std::sin(3 * i);
    y[2 * i] = 2 * x[2 * i] - x[2 * i + 1], y[2 * i + 1] = 0.5 * x[2 * i + 1];  // Y = X W*, W* = [[2, 0], [−1, ½]]
  }

  // --- docs/optimizers.md, "Example" ---
  // A loss of the points Z (n × d_out): ℓ(Z) = ½‖Z − Y‖², its gradient and Hessian-vector product.
  optim::objective points_loss;
  points_loss.gradient = [&y](optim::const_span z, optim::mutable_span g) {
    double value = 0;
    for (std::size_t k = 0; k < z.size(); ++k) {
      g[k] = z[k] - y[k];
      value += 0.5 * g[k] * g[k];
    }
    return value;
  };
  points_loss.hvp = [](optim::const_span, optim::const_span v, optim::mutable_span hv) {
    std::copy(v.begin(), v.end(), hv.begin());
  };
  // The same loss as a function of W (d_in × d_out): Z = XW, chain rule inside.
  const optim::objective loss_of_w = optim::linear_map_objective(points_loss, x, n, d_in, d_out);

  optim::newton_cg_options options;
  options.gradient_tolerance = 1e-10;
  options.on_iteration = [](const optim::optimizer_iteration& it) {
    std::printf("iteration %d  f = %.3e  |g| = %.3e  CG %d  step %.2f\n", it.iteration, it.value,
                it.gradient_norm, it.cg_iterations, it.step_size);
  };
  const optim::optimizer_result fit = optim::newton_cg(loss_of_w, std::vector<double>(d_in * d_out, 0.0), options);

  // Is the solution a strict minimum? λ_min of the Hessian (here XᵀX per output column) by Lanczos.
  const optim::lanczos_result curvature =
      optim::lanczos_extremes(optim::hessian_at(loss_of_w, fit.theta), d_in * d_out);
  // --- end of the example ---

  EXPECT_EQ(fit.status, optim::optimizer_status::converged);
  const std::vector<double> expected{2, 0, -1, 0.5};
  for (int k = 0; k < 4; ++k) EXPECT_NEAR(fit.theta[static_cast<std::size_t>(k)], expected[static_cast<std::size_t>(k)], 1e-9);
  EXPECT_GT(curvature.lambda_min, 0);
  EXPECT_TRUE(curvature.converged);
}

}  // namespace
