// solver::potential_vjp: argument validation, unsupported problems, non-convergence as documented,
// single precision against float64, and the CG iteration counts with and without the diagonal
// preconditioner (printed; the numbers quoted in docs/math.md).
#include <gtest/gtest.h>

#include <iostream>

#include "potential_vjp_support.hpp"

namespace fs = flashsinkhorn;
using namespace testing_support;

namespace {

template <class Call>
std::string message_of(Call&& call) {
  try {
    call();
  } catch (const fs::error& e) {
    return e.what();
  }
  return "(no exception)";
}

class PotentialVjpValidation : public ::testing::Test {
 protected:
  reference::cloud x = reference::random_cloud(9, 2, 1);
  reference::cloud y = reference::random_cloud(7, 2, 2);
  std::vector<double> df = std::vector<double>(9, 1.0 / 9), dg = std::vector<double>(7, 1.0 / 7);
  std::vector<double> gx = std::vector<double>(18);
  fs::options o = fixed_iterations(50, fs::precision::fp64);

  fs::potential_vjp_outputs outputs() { return {fs::host_matrix(gx.data(), 9, 2), {}, {}, {}}; }
};

TEST_F(PotentialVjpValidation, RejectsBadArgumentsNamingThem) {
  fs::solver solver(make_problem(x, y, 0.5, 1.0), o);
  const auto call = [&](std::vector<double>& f_bar, std::vector<double>& g_bar, const fs::potential_vjp_outputs& out,
                        const fs::potential_vjp_options& settings = {}) {
    return message_of([&] {
      solver.potential_vjp(fs::host_vector(f_bar.data(), static_cast<std::int64_t>(f_bar.size())),
                           fs::host_vector(g_bar.data(), static_cast<std::int64_t>(g_bar.size())), out, settings);
    });
  };
  EXPECT_THROW(solver.potential_vjp(fs::host_vector(df.data(), 9), fs::host_vector(dg.data(), 7), outputs()),
               fs::invalid_argument);
  EXPECT_NE(call(df, dg, outputs()).find("call solve() first"), std::string::npos);
  solver.solve();

  std::vector<double> short_df(8, 0.0);
  EXPECT_NE(call(short_df, dg, outputs()).find("df has 8 values but X has 9 points"), std::string::npos);
  std::vector<double> long_dg(8, 0.0);
  EXPECT_NE(call(df, long_dg, outputs()).find("dg has 8 values but Y has 7 points"), std::string::npos);
  std::vector<double> nan_dg = dg;
  nan_dg[4] = std::nan("");
  EXPECT_NE(call(df, nan_dg, outputs()).find("dg is not finite at index 4"), std::string::npos);
  EXPECT_NE(call(df, dg, fs::potential_vjp_outputs{}).find("no output requested"), std::string::npos);
  std::vector<double> wrong(14);
  EXPECT_NE(call(df, dg, {fs::host_matrix(wrong.data(), 7, 2), {}, {}, {}}).find("grad_x is 7×2, expected 9×2"),
            std::string::npos);
  fs::potential_vjp_options bad;
  bad.tolerance = -1;
  EXPECT_NE(call(df, dg, outputs(), bad).find("tolerance"), std::string::npos);
  bad = {};
  bad.max_iterations = 0;
  EXPECT_NE(call(df, dg, outputs(), bad).find("max_iterations"), std::string::npos);
  EXPECT_THROW(solver.potential_vjp(fs::host_vector(short_df.data(), 8), {}, outputs()), fs::invalid_argument);
}

TEST_F(PotentialVjpValidation, EmptyCotangentMeansZero) {
  fs::solver solver(make_problem(x, y, 0.5, 1.0), o);
  solver.solve();
  std::vector<double> zeros(9, 0.0);
  std::vector<double> with_zeros(18), with_empty(18);
  solver.potential_vjp(fs::host_vector(zeros.data(), 9), fs::host_vector(dg.data(), 7),
                       {fs::host_matrix(with_zeros.data(), 9, 2), {}, {}, {}});
  solver.potential_vjp({}, fs::host_vector(dg.data(), 7), {fs::host_matrix(with_empty.data(), 9, 2), {}, {}, {}});
  EXPECT_EQ(with_zeros, with_empty);
}

// The usage example of docs/math.md, as written there.
TEST(PotentialVjpUsage, DocumentedExample) {
  const reference::cloud x = reference::random_cloud(9, 2, 1), y = reference::random_cloud(7, 2, 2);
  const std::int64_t n = 9, d = 2;
  flashsinkhorn::solver s(make_problem(x, y, 0.5, 1.0), fixed_iterations(50, fs::precision::fp64));
  flashsinkhorn::result r = s.solve();
  std::vector<double> df = r.f;
  const double mean = std::accumulate(df.begin(), df.end(), 0.0) / static_cast<double>(df.size());
  for (double& v : df) v -= mean;
  std::vector<double> grad_x(static_cast<std::size_t>(n * d));
  flashsinkhorn::potential_vjp_report report =
      s.potential_vjp(flashsinkhorn::host_vector(df.data(), n), {},  // empty dg: zeros
                      {.grad_x = flashsinkhorn::host_matrix(grad_x.data(), n, d)});
  EXPECT_TRUE(report.converged);
  EXPECT_GT(max_abs(grad_x), 0.0);
}

TEST_F(PotentialVjpValidation, UnbalancedAndZeroWeightsAreUnsupported) {
  fs::options unbalanced = o;
  unbalanced.reach_y = 1.0;
  fs::solver damped(make_problem(x, y, 0.5, 1.0), unbalanced);
  damped.solve();
  EXPECT_THROW(damped.potential_vjp(fs::host_vector(df.data(), 9), fs::host_vector(dg.data(), 7), outputs()),
               fs::unsupported);

  reference::cloud holes = y;
  holes.weights[2] = 0;
  fs::solver zero(make_problem(x, holes, 0.5, 1.0), o);
  zero.solve();
  const std::string message = message_of([&] {
    zero.potential_vjp(fs::host_vector(df.data(), 9), fs::host_vector(dg.data(), 7), outputs());
  });
  EXPECT_NE(message.find("b has a zero weight at index 2"), std::string::npos) << message;
  EXPECT_THROW(zero.potential_vjp(fs::host_vector(df.data(), 9), fs::host_vector(dg.data(), 7), outputs()),
               fs::unsupported);
}

// Too few iterations: reported (converged = false, the residual of the iterate), not thrown, and
// the gradients of that iterate are written.
TEST_F(PotentialVjpValidation, NonConvergenceIsReported) {
  fs::solver solver(make_problem(x, y, 0.05, 1.0), o);
  solver.solve();
  const potential_loss loss = linear_loss(9, 7, 3, true);
  std::vector<double> f_bar, g_bar;
  loss.cotangent({}, {}, f_bar, g_bar);
  fs::potential_vjp_options settings;
  settings.tolerance = 1e-14;
  settings.max_iterations = 1;
  const vjp_gradients grad = potential_gradients(solver, f_bar, g_bar, 2, settings);
  EXPECT_FALSE(grad.report.converged);
  EXPECT_EQ(grad.report.iterations, 1);
  EXPECT_GT(grad.report.relative_residual, settings.tolerance);
  EXPECT_TRUE(std::isfinite(max_abs(grad.x)) && max_abs(grad.x) > 0);
}

// fp32 (float32 operands and FMA; float64 CG on the host) against fp64 on the same problem, with
// the cotangents of the fp64 potentials. The fp32 solve stops at a marginal error of 3e-7 (near its
// floor); the fp32 CG's true residual floor is ~1e-7 (measured: 1.0e-7). The gradients' error is
// dominated by the solve's: ~3× the marginal error for ∇X, ∇Y, but ~300× for ∇a, ∇b on this
// problem (weights U[0.1, 1.1) normalised, so λ ~ ḟ/a is ~10³·ḟ and ∂L/∂a = −ε·diag(1/a)Pλ_g
// inherits that scale). Stated bounds, relative to the largest entry: 1e-5 (X, Y), 5e-4 (a, b);
// measured 7.7e-7, 1.2e-6, 8.6e-5, 8.9e-5.
TEST(PotentialVjpPrecision, Fp32AgreesWithFp64) {
  const reference::cloud x = reference::random_cloud(97, 4, 21, 1.0, 0.3);
  const reference::cloud y = reference::random_cloud(65, 4, 22, 1.0, -0.3);
  const double eps = 0.3;
  const potential_loss loss = nonlinear_loss();
  fs::solver exact(make_problem(x, y, eps, 1.0), tight_fp64());
  const fs::result r = exact.solve();
  std::vector<double> df, dg;
  loss.cotangent(r.f, r.g, df, dg);
  fs::potential_vjp_options tight;
  tight.tolerance = 1e-12;
  const vjp_gradients reference_grad = potential_gradients(exact, df, dg, 4, tight);
  ASSERT_TRUE(reference_grad.report.converged);

  fs::options single = fixed_iterations(5000, fs::precision::fp32);
  single.tolerance = 3e-7;
  fs::solver approximate(make_problem(x, y, eps, 1.0), single);
  approximate.solve();
  const vjp_gradients grad = potential_gradients(approximate, df, dg, 4, {});  // default tolerance 1e-6
  std::cout << "[ fp32 ] CG " << grad.report.iterations << " iterations, residual " << grad.report.relative_residual
            << "; relative errors X " << max_abs_diff(grad.x, reference_grad.x) / max_abs(reference_grad.x) << ", Y "
            << max_abs_diff(grad.y, reference_grad.y) / max_abs(reference_grad.y) << ", a "
            << max_abs_diff(grad.a, reference_grad.a) / max_abs(reference_grad.a) << ", b "
            << max_abs_diff(grad.b, reference_grad.b) / max_abs(reference_grad.b) << "\n";
  EXPECT_TRUE(grad.report.converged) << grad.report.relative_residual;
  EXPECT_LT(max_abs_diff(grad.x, reference_grad.x), 1e-5 * max_abs(reference_grad.x));
  EXPECT_LT(max_abs_diff(grad.y, reference_grad.y), 1e-5 * max_abs(reference_grad.y));
  EXPECT_LT(max_abs_diff(grad.a, reference_grad.a), 5e-4 * max_abs(reference_grad.a));
  EXPECT_LT(max_abs_diff(grad.b, reference_grad.b), 5e-4 * max_abs(reference_grad.b));
}

// Iterations to 1e-10 with and without diag(c): printed for docs/math.md, both must converge.
TEST(PotentialVjpPrecision, PreconditionerIterationCounts) {
  struct case_t {
    const char* name;
    std::int64_t n, m;
    double eps;
    bool uniform;
  };
  for (const case_t& c : {case_t{"n=23 m=17 ε=0.4 random weights", 23, 17, 0.4, false},
                          case_t{"n=200 m=150 ε=0.1 random weights", 200, 150, 0.1, false},
                          case_t{"n=200 m=150 ε=0.02 random weights", 200, 150, 0.02, false},
                          case_t{"n=200 m=150 ε=0.1 uniform weights", 200, 150, 0.1, true}}) {
    const reference::cloud x = reference::random_cloud(c.n, 3, 31, 1.0, 0.2, c.uniform);
    const reference::cloud y = reference::random_cloud(c.m, 3, 32, 1.0, -0.2, c.uniform);
    fs::solver solver(make_problem(x, y, c.eps, 1.0), tight_fp64());
    const fs::result r = solver.solve();
    const potential_loss loss = nonlinear_loss();
    std::vector<double> df, dg;
    loss.cotangent(r.f, r.g, df, dg);
    int iterations[2];
    for (int k = 0; k < 2; ++k) {
      fs::potential_vjp_options settings;
      settings.tolerance = 1e-10;
      settings.max_iterations = 5000;
      settings.preconditioner = k == 0 ? fs::cg_preconditioner::none : fs::cg_preconditioner::diagonal;
      const vjp_gradients grad = potential_gradients(solver, df, dg, 3, settings);
      EXPECT_TRUE(grad.report.converged) << c.name << " " << grad.report.relative_residual;
      iterations[k] = grad.report.iterations;
    }
    std::cout << "[ CG iterations ] " << c.name << " (solve converged: " << r.converged << "): " << iterations[0]
              << " plain, " << iterations[1] << " with diag(c)\n";
  }
}

}  // namespace
