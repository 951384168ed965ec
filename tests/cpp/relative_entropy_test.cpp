// result::relative_entropy = KL(P ‖ a⊗b) (generalised) of the plan the library uses after a solve:
// strong duality cost = ⟨P, C⟩ + ε·KL at convergence, KL ≥ 0, the dense float64 KL of the same plan
// (balanced, zero weights, unbalanced, unnormalised masses), and the OT(a, b) plan when debiased.
#include <gtest/gtest.h>

#include <cmath>

#include "test_problems.hpp"

namespace fs = flashsinkhorn;
using namespace testing_support;

namespace {

fs::options converged(fs::solver_kind kind) {
  fs::options o = fixed_iterations(5000, fs::precision::fp64);
  o.solver = kind;
  o.tolerance = 1e-14;
  o.check_every = 5;
  return o;
}

// Strong duality: OT_ε = min_P ⟨P,C⟩ + ε·KL(P‖a⊗b) = max ⟨a,f⟩ + ⟨b,g⟩. At a marginal error of
// 1e-14 the gap is ~1e-14·|g|; 1e-9 leaves room for the n·m-term sums in float64.
TEST(RelativeEntropy, StrongDualityAtConvergence) {
  struct shape { std::int64_t n, m, d; std::uint64_t seed; double eps; };
  for (const shape& c : {shape{1, 7, 2, 11, 0.5}, shape{97, 65, 3, 12, 0.2}, shape{130, 129, 5, 13, 1.0}}) {
    for (fs::solver_kind kind : {fs::solver_kind::alternating, fs::solver_kind::symmetric}) {
      const reference::cloud x = reference::random_cloud(c.n, c.d, c.seed);
      const reference::cloud y = reference::random_cloud(c.m, c.d, c.seed + 100, 1.0, 0.7);
      const fs::result r = fs::solve(make_problem(x, y, c.eps, 0.5), converged(kind));
      const std::string where = describe(c.n, c.m, c.d, c.seed) + (kind == fs::solver_kind::symmetric ? " symmetric" : "");
      ASSERT_TRUE(r.converged) << where;
      // KL ≥ 0 up to the roundoff of its O(n·m) terms (n = 1 gives P = a⊗b: KL = 0 exactly).
      EXPECT_GE(r.relative_entropy, -1e-13) << where;
      if (c.n == 1) {
        EXPECT_NEAR(r.relative_entropy, 0.0, 1e-13) << where;
      }
      EXPECT_NEAR(r.cost, r.primal_cost + c.eps * r.relative_entropy, 1e-9 * std::max(1.0, std::abs(r.cost))) << where;
    }
  }
}

// Before convergence too, the streamed KL is that of the plan P_ij = a_i·softmax_j((g_j − C_ij)/ε +
// log b_j): the dense float64 plan of the same g, with zero weights on both sides (0·log 0 = 0).
TEST(RelativeEntropy, MatchesTheDensePlanWithZeroWeights) {
  reference::cloud x = reference::random_cloud(41, 3, 21);
  reference::cloud y = reference::random_cloud(33, 3, 22, 1.0, 1.5);
  x.weights[0] = x.weights[17] = 0;
  y.weights[5] = y.weights[32] = 0;
  const double eps = 0.3, s = 1.0;
  for (fs::precision mode : {fs::precision::fp64, fs::precision::fp32}) {
    const fs::result r = fs::solve(make_problem(x, y, eps, s), fixed_iterations(7, mode));
    reference::cloud xn = x, yn = y;  // the weights as solved: normalised
    double ma = 0, mb = 0;
    for (double w : xn.weights) ma += w;
    for (double w : yn.weights) mb += w;
    for (double& w : xn.weights) w /= ma;
    for (double& w : yn.weights) w /= mb;
    const std::vector<double> plan = reference::row_plan(xn, yn, r.g, eps, s);
    const double expected = reference::generalised_kl(plan, xn.weights, yn.weights);
    // KL·ε is a difference of terms of size |C|, |g|: its error is the precision's times those.
    const double tol = mode == fs::precision::fp64 ? 1e-12 : 1e-4;
    ASSERT_TRUE(std::isfinite(r.relative_entropy));
    EXPECT_GT(r.relative_entropy, 0.0);
    EXPECT_NEAR(r.relative_entropy, expected, tol * std::max(1.0, expected)) << (mode == fs::precision::fp64 ? "fp64" : "fp32");
  }
}

// With a reach on X the row masses m_i = a_i·exp((f_i − T_f(g)_i)/ε) differ from a_i; with reaches
// on both sides Σ P ≠ 1 too, and the mass terms of the generalised KL count. Dense plan:
// a_i b_j exp((f_i + g_j − C_ij)/ε).
TEST(RelativeEntropy, UnbalancedMatchesTheDensePlan) {
  const reference::cloud x = reference::random_cloud(29, 2, 31);
  const reference::cloud y = reference::random_cloud(37, 2, 32, 1.0, 2.0);
  const double eps = 0.25, s = 1.0;
  struct reaches { std::optional<double> x, y; const char* name; };
  for (const reaches& rc : {reaches{1.0, 1.0, "both"}, reaches{0.7, std::nullopt, "x only"}}) {
    fs::options o = fixed_iterations(40, fs::precision::fp64);
    o.reach_x = rc.x;
    o.reach_y = rc.y;
    const fs::result r = fs::solve(make_problem(x, y, eps, s), o);
    // The plan of the solver's rows: f recomputed from g on a balanced X, the damped f with a reach.
    const std::vector<double> f = rc.x ? r.f : reference::softmin(x, y, r.g, eps, s);
    const std::vector<double> plan = reference::potential_plan(x, y, f, r.g, eps, s);
    double plan_mass = 0, row_mass_change = 0;
    for (std::int64_t i = 0; i < x.count; ++i) {
      double row = 0;
      for (std::int64_t j = 0; j < y.count; ++j) row += plan[i * y.count + j];
      plan_mass += row;
      row_mass_change = std::max(row_mass_change, std::abs(row - x.weights[i]) / x.weights[i]);
    }
    const double expected = reference::generalised_kl(plan, x.weights, y.weights);
    EXPECT_GT(row_mass_change, 1e-2) << rc.name << ": the test needs row masses m_i ≠ a_i";
    if (rc.y) {
      EXPECT_GT(std::abs(plan_mass - 1), 1e-3) << rc.name << ": the test needs a plan whose mass is not 1";
    }
    EXPECT_GT(r.relative_entropy, 0.0) << rc.name;
    EXPECT_NEAR(r.relative_entropy, expected, 1e-12 * std::max(1.0, expected)) << rc.name;
  }
}

// normalize_weights = false with Σa = Σb = M: the mass terms −M + M² stay, and strong duality reads
// cost = ⟨P,C⟩ + ε·(KL − M² + M) (result.hpp).
TEST(RelativeEntropy, UnnormalisedMassesKeepTheMassTerms) {
  reference::cloud x = reference::random_cloud(19, 2, 41);
  reference::cloud y = reference::random_cloud(23, 2, 42, 1.0, 1.0);
  const double mass = 2.5, eps = 0.5;
  for (double& w : x.weights) w *= mass;
  for (double& w : y.weights) w *= mass;
  fs::options o = converged(fs::solver_kind::alternating);
  o.normalize_weights = false;
  const fs::result r = fs::solve(make_problem(x, y, eps, 1.0), o);
  ASSERT_TRUE(r.converged);
  const std::vector<double> plan = reference::row_plan(x, y, r.g, eps, 1.0);
  EXPECT_NEAR(r.relative_entropy, reference::generalised_kl(plan, x.weights, y.weights), 1e-11);
  EXPECT_NEAR(r.cost, r.primal_cost + eps * (r.relative_entropy - mass * mass + mass), 1e-9 * std::abs(r.cost));
}

// Debiasing changes `cost` (S_ε) but not the OT(a, b) iterates: primal_cost and relative_entropy
// are those of the plain solve.
TEST(RelativeEntropy, DebiasedReportsTheCrossPlan) {
  const reference::cloud x = reference::random_cloud(31, 3, 51);
  const reference::cloud y = reference::random_cloud(26, 3, 52, 1.0, 0.5);
  const double eps = 0.4;
  const fs::options plain = fixed_iterations(50, fs::precision::fp64);
  fs::options debiased = plain;
  debiased.debias = true;
  const fs::result rp = fs::solve(make_problem(x, y, eps, 1.0), plain);
  const fs::result rd = fs::solve(make_problem(x, y, eps, 1.0), debiased);
  EXPECT_NE(rp.cost, rd.cost);
  EXPECT_NEAR(rd.primal_cost, rp.primal_cost, 1e-13 * rp.primal_cost);
  EXPECT_NEAR(rd.relative_entropy, rp.relative_entropy, 1e-13 * std::max(1.0, rp.relative_entropy));
}

// ε → ∞ flattens the plan onto a⊗b, so KL → 0 (here ε = 10⁴ on unit-scale clouds: KL = O(ε⁻²)).
TEST(RelativeEntropy, VanishesForLargeTemperature) {
  const reference::cloud x = reference::random_cloud(20, 2, 61);
  const reference::cloud y = reference::random_cloud(25, 2, 62);
  const fs::result r = fs::solve(make_problem(x, y, 1e4, 1.0), converged(fs::solver_kind::alternating));
  EXPECT_GE(r.relative_entropy, 0.0);
  EXPECT_LT(r.relative_entropy, 1e-6);
}

}  // namespace

// options::primal_terms off: the solve is the loop alone (the terms are NaN in the result), and
// solver::primal_objective() gives, on demand, the numbers the solve would have put there; before a
// solve it names what is missing.
TEST(RelativeEntropy, OnDemandTermsEqualTheSolvesOwn) {
  const reference::cloud x = reference::random_cloud(57, 3, 31);
  const reference::cloud y = reference::random_cloud(43, 3, 32, 1.0, 0.8);
  const fs::problem p = make_problem(x, y, 0.25, 1.0);
  for (fs::precision mode : {fs::precision::fp64, fs::precision::fp32}) {
    fs::options with_terms = fixed_iterations(9, mode);
    const fs::result expected = fs::solve(p, with_terms);
    fs::options lazy = with_terms;
    lazy.primal_terms = false;
    fs::solver s(p, lazy);
    EXPECT_THROW((void)s.primal_objective(), fs::invalid_argument);
    const fs::result r = s.solve();
    EXPECT_TRUE(std::isnan(r.primal_cost));
    EXPECT_TRUE(std::isnan(r.relative_entropy));
    EXPECT_EQ(r.cost, expected.cost);
    const fs::objective_terms terms = s.primal_objective();
    EXPECT_EQ(terms.primal_cost, expected.primal_cost);
    EXPECT_EQ(terms.relative_entropy, expected.relative_entropy);
  }
}
