// Over-relaxation (options::relaxation, solver_loop.hpp): on an ill-conditioned problem (ε small
// against the cost range) ω = 1.8 reaches the tolerance in far fewer iterations than plain Sinkhorn
// and converges to the same solution (checked against the ω = 1 solve and the float64 dense
// oracle's marginals); ω = 1 is the plain loop bit for bit; bad ω and ω with the symmetric solver
// are refused; the loop's steps carry the blend the contract says (spy backend).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "core/backend.hpp"
#include "core/solver_loop.hpp"
#include "relaxation_problems.hpp"
#include "test_problems.hpp"

namespace fs = flashsinkhorn;
using testing_support::ill_conditioned;
using testing_support::make_problem;
using testing_support::relaxed_options;

namespace {

double weighted_mean(const std::vector<double>& v, const std::vector<double>& w) {
  double s = 0;
  for (std::size_t i = 0; i < v.size(); ++i) s += w[i] * v[i];
  return s;
}

// L1 marginal error Σ_i |Σ_j P_ij − a_i| + Σ_j |Σ_i P_ij − b_j| of P_ij = a_i b_j exp((f_i + g_j − C_ij)/ε).
double dense_marginal_error(const reference::cloud& x, const reference::cloud& y, const fs::result& r, double eps) {
  const std::vector<double> plan = reference::potential_plan(x, y, r.f, r.g, eps, 1.0);
  std::vector<double> rows(static_cast<std::size_t>(x.count), 0.0), cols(static_cast<std::size_t>(y.count), 0.0);
  for (std::int64_t i = 0; i < x.count; ++i) {
    for (std::int64_t j = 0; j < y.count; ++j) {
      rows[i] += plan[i * y.count + j];
      cols[j] += plan[i * y.count + j];
    }
  }
  double error = 0;
  for (std::int64_t i = 0; i < x.count; ++i) error += std::abs(rows[i] - x.weights[i]);
  for (std::int64_t j = 0; j < y.count; ++j) error += std::abs(cols[j] - y.weights[j]);
  return error;
}

TEST(Relaxation, CutsIterationsAndReachesTheSameSolution) {
  ill_conditioned data;
  const fs::problem p = make_problem(data.x, data.y, data.eps, 1.0);
  const fs::result plain = fs::solve(p, relaxed_options(1.0));
  const fs::result relaxed = fs::solve(p, relaxed_options(1.8));
  ASSERT_TRUE(plain.converged) << plain.iterations << " iterations, error " << plain.marginal_error;
  ASSERT_TRUE(relaxed.converged) << relaxed.iterations << " iterations, error " << relaxed.marginal_error;
  EXPECT_LE(2 * relaxed.iterations, plain.iterations) << "ω = 1.8: " << relaxed.iterations << ", ω = 1: " << plain.iterations;
  EXPECT_FALSE(relaxed.relaxation_fell_back);
  EXPECT_FALSE(plain.relaxation_fell_back);

  // Both stop at a marginal error ≤ tol = 1e-6. The potentials are then pinned only to ~ε·tol/(1 − θ)
  // (on this problem they agree to 8e-6, 7e-7 of their scale; at smaller ε or other draws a loose
  // tol can leave them far apart along near-null directions while the value agrees), and the
  // balanced value, stationary in the potentials, to the square of that (1e-12 here). The
  // solutions agree up to the gauge (f + c, g − c): compare f − ⟨a, f⟩ and g + ⟨a, f⟩.
  const double scale = std::max(testing_support::max_abs(plain.f), testing_support::max_abs(plain.g));
  const double tolerance = 1e-5 * scale;
  EXPECT_NEAR(relaxed.cost, plain.cost, 1e-9 * scale);
  const double shift_plain = weighted_mean(plain.f, data.x.weights);
  const double shift_relaxed = weighted_mean(relaxed.f, data.x.weights);
  std::vector<double> fp = plain.f, fr = relaxed.f, gp = plain.g, gr = relaxed.g;
  for (double& v : fp) v -= shift_plain;
  for (double& v : fr) v -= shift_relaxed;
  for (double& v : gp) v += shift_plain;
  for (double& v : gr) v += shift_relaxed;
  EXPECT_LE(testing_support::max_abs_diff(fr, fp), tolerance);
  EXPECT_LE(testing_support::max_abs_diff(gr, gp), tolerance);

  // The float64 dense oracle: the plan of the returned (f, g) — g from the plain g-update that
  // follows a relaxed last block — has exact columns and rows off by no more than the reported error.
  EXPECT_LE(dense_marginal_error(data.x, data.y, relaxed, data.eps), 1e-6);
  EXPECT_LE(dense_marginal_error(data.x, data.y, plain, data.eps), 1e-6);
}

TEST(Relaxation, UnbalancedCutsIterationsToo) {
  ill_conditioned data;
  const fs::problem p = make_problem(data.x, data.y, data.eps, 1.0);
  fs::options plain_options = relaxed_options(1.0), relaxed = relaxed_options(1.8);
  plain_options.reach_x = plain_options.reach_y = relaxed.reach_x = relaxed.reach_y = 30.0;
  const fs::result a = fs::solve(p, plain_options);
  const fs::result b = fs::solve(p, relaxed);
  ASSERT_TRUE(a.converged);
  ASSERT_TRUE(b.converged);
  EXPECT_LE(2 * b.iterations, a.iterations) << "ω = 1.8: " << b.iterations << ", ω = 1: " << a.iterations;
  // Unbalanced potentials have no gauge: compare them directly (they agree to 3e-6 here; the
  // value, first order in them, to 4e-8).
  const double scale = std::max(testing_support::max_abs(a.f), testing_support::max_abs(a.g));
  EXPECT_NEAR(b.cost, a.cost, 1e-5 * scale);
  EXPECT_LE(testing_support::max_abs_diff(b.f, a.f), 1e-5 * scale);
}

TEST(Relaxation, OmegaOneIsThePlainLoopBitForBit) {
  ill_conditioned data;
  const fs::problem p = make_problem(data.x, data.y, 0.5, 1.0);
  fs::options o = relaxed_options(1.0);
  o.max_iterations = 3000;
  const fs::result with_option = fs::solve(p, o);
  fs::options untouched;  // relaxation left at its default
  untouched.device = fs::device_kind::cpu;
  untouched.precision = fs::precision::fp64;
  untouched.scaling = 0.5;
  untouched.tolerance = 1e-6;
  untouched.max_iterations = 3000;
  const fs::result without = fs::solve(p, untouched);
  EXPECT_EQ(with_option.iterations, without.iterations);
  EXPECT_EQ(with_option.cost, without.cost);
  EXPECT_EQ(with_option.marginal_error, without.marginal_error);
  EXPECT_EQ(with_option.f, without.f);
  EXPECT_EQ(with_option.g, without.g);
}

void expect_refused(double relaxation, fs::solver_kind solver, const char* keyword) {
  ill_conditioned data;
  const fs::problem p = make_problem(data.x, data.y, data.eps, 1.0);
  fs::options o = relaxed_options(relaxation);
  o.solver = solver;
  try {
    fs::solver(p, o).solve();
    FAIL() << "expected invalid_argument for relaxation = " << relaxation;
  } catch (const fs::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(keyword), std::string::npos) << "message: " << e.what();
  }
}

TEST(Relaxation, RefusesOmegaOutsideZeroTwoAndTheSymmetricSolver) {
  for (double bad : {0.0, -0.5, 2.0, 2.5, std::nan(""), std::numeric_limits<double>::infinity()}) {
    expect_refused(bad, fs::solver_kind::alternating, "relaxation must be a finite number in (0, 2)");
  }
  expect_refused(1.5, fs::solver_kind::symmetric, "needs the alternating solver");
  // ω = 1 stays allowed with the symmetric solver (the default).
  ill_conditioned data;
  fs::options o = relaxed_options(1.0);
  o.solver = fs::solver_kind::symmetric;
  o.max_iterations = 5;
  EXPECT_NO_THROW(fs::solve(make_problem(data.x, data.y, 1.0, 1.0), o));
}

// The blends the loop sends, and the safeguard, through a backend that records them.
class blend_spy final : public flashsinkhorn::detail::backend {
 public:
  struct step_record {
    double blend;
    bool error;
    flashsinkhorn::detail::slot out;
  };
  std::vector<step_record> steps;
  std::vector<double> errors;  // returned by take_error in order (then 1)

  [[nodiscard]] std::string name() const override { return "spy"; }
  void softmin(const flashsinkhorn::detail::softmin_step& step) override {
    steps.push_back({step.blend, step.accumulate_error, step.out});
  }
  double take_error() override { return reads_ < errors.size() ? errors[reads_++] : 1.0; }
  void write_potential(flashsinkhorn::detail::slot, const std::vector<double>&) override {}
  [[nodiscard]] std::vector<double> read_potential(flashsinkhorn::detail::slot) const override { return {}; }
  void copy_potential(flashsinkhorn::detail::slot, flashsinkhorn::detail::slot) override {}
  void swap_potentials(flashsinkhorn::detail::slot, flashsinkhorn::detail::slot) override {}
  [[nodiscard]] flashsinkhorn::detail::plan_rows_result plan_rows(const flashsinkhorn::detail::plan_rows_request&) const override {
    return {};
  }
  [[nodiscard]] flashsinkhorn::detail::plan_rows_result plan_quadratic_rows(
      const flashsinkhorn::detail::plan_quadratic_request&) const override {
    return {};
  }
  void point_gradient(const flashsinkhorn::detail::point_gradient_request&) override {}
  void read_point_gradient(flashsinkhorn::detail::side, const fs::mutable_matrix_view&) const override {}

 private:
  std::size_t reads_ = 0;
};

// The alternating loop at ε = 1 after `schedule`, checked every 3 iterations, no tolerance.
flashsinkhorn::detail::loop_config spy_loop(std::vector<double> schedule, int iterations, double relaxation) {
  flashsinkhorn::detail::loop_config c;
  c.solver = fs::solver_kind::alternating;
  c.schedule = std::move(schedule);
  c.eps = 1;
  c.max_iterations = iterations;
  c.check_every = 3;
  c.tolerance = 0;
  c.relaxation = relaxation;
  return c;
}

TEST(Relaxation, LoopRelaxesBothHalfStepsExceptTheCheckedFUpdateAndFallsBack) {
  blend_spy spy;
  // A rise within the readings' noise (third check) keeps ω; the fourth rises 40% above the
  // smallest error so far: ω = 1 from then on.
  spy.errors = {1.0, 0.5, 0.5 * (1 + 1e-6), 0.7, 0.1};
  const flashsinkhorn::detail::loop_outcome out = run_sinkhorn_loop(spy, spy_loop({4.0, 2.0}, 15, 1.5));
  EXPECT_TRUE(out.relaxation_fell_back);
  ASSERT_EQ(spy.steps.size(), 2u * (2 + 15));
  // The schedule's iterations are plain.
  for (int k = 0; k < 4; ++k) EXPECT_EQ(spy.steps[k].blend, 1.0) << "schedule step " << k;
  for (int iteration = 0; iteration < 15; ++iteration) {
    const auto& f_step = spy.steps[4 + 2 * iteration];
    const auto& g_step = spy.steps[4 + 2 * iteration + 1];
    const bool checked = iteration % 3 == 2;
    const bool relaxed = iteration < 12;  // blocks 1–4 ran before the fourth check fell back
    EXPECT_FALSE(f_step.error);
    EXPECT_EQ(g_step.error, checked);
    EXPECT_EQ(f_step.blend, relaxed && !checked ? 1.5 : 1.0) << "iteration " << iteration;
    EXPECT_EQ(g_step.blend, relaxed ? 1.5 : 1.0) << "iteration " << iteration;
  }
}

TEST(Relaxation, ARelaxedLastBlockIsFollowedByOnePlainGUpdate) {
  blend_spy spy;
  spy.errors = {1.0, 0.5, 0.25};  // falling: ω stays
  const flashsinkhorn::detail::loop_outcome out = run_sinkhorn_loop(spy, spy_loop({2.0}, 9, 1.5));
  EXPECT_FALSE(out.relaxation_fell_back);
  // Schedule (2 steps), 9 iterations (18), then g ← κT_g(f): plain, no error term, into g.
  ASSERT_EQ(spy.steps.size(), 2u * (1 + 9) + 1);
  EXPECT_EQ(spy.steps[spy.steps.size() - 2].blend, 1.5);  // the last block's g-update was relaxed
  const auto& last = spy.steps.back();
  EXPECT_EQ(last.blend, 1.0);
  EXPECT_FALSE(last.error);
  EXPECT_EQ(last.out, flashsinkhorn::detail::slot::g);
  // ω = 1 throughout: no extra step (the plain loop's sequence, OmegaOneIsThePlainLoopBitForBit).
  blend_spy plain;
  run_sinkhorn_loop(plain, spy_loop({2.0}, 9, 1.0));
  EXPECT_EQ(plain.steps.size(), 2u * (1 + 9));
}

}  // namespace
