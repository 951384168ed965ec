// The label-augmented cost C_ij = s·(λx‖x_i − y_j‖² + λy·W[l_i, l_j]) on the CPU backend against
// the float64 dense reference, which looks W up entry by entry: a Euclidean W (embedded with
// positive coordinates only) and a non-Euclidean W (pseudo-Euclidean: negative-signature
// coordinates, the keys' copy η⊙q), plain and debiased, every precision mode; the ε-scaling
// diameter of a labelled problem; and one exact fact (a Euclidean W is extra feature columns).
#include <gtest/gtest.h>

#include <cmath>
#include <tuple>

#include "core/epsilon_schedule.hpp"
#include "label_problems.hpp"

namespace fs = flashsinkhorn;
using namespace testing_support;

namespace {

enum class label_kind { euclidean, non_euclidean };

reference::label_matrix label_matrix_of(label_kind kind, std::int64_t label_count, std::uint64_t seed) {
  return kind == label_kind::euclidean ? euclidean_label_matrix(label_count, seed)
                                       : non_euclidean_label_matrix(label_count, seed);
}

// Potentials compared after removing the gauge (f + c, g − c): shift by ⟨a, f − f_ref⟩.
void expect_potentials_near(const fs::result& r, const reference::solution& ref, const reference::cloud& x,
                            double tol, const std::string& where) {
  double shift = 0;
  for (std::int64_t i = 0; i < x.count; ++i) shift += x.weights[i] * (r.f[i] - ref.f[i]);
  const double scale = std::max({1.0, max_abs(ref.f), max_abs(ref.g)});
  for (std::size_t i = 0; i < ref.f.size(); ++i) ASSERT_NEAR(r.f[i] - shift, ref.f[i], tol * scale) << where << " f[" << i << "]";
  for (std::size_t j = 0; j < ref.g.size(); ++j) ASSERT_NEAR(r.g[j] + shift, ref.g[j], tol * scale) << where << " g[" << j << "]";
}

// ⟨P, C⟩ of the reference's row-renormalised plan, C with the label term.
double reference_primal(const reference::cloud& x, const reference::cloud& y, const std::vector<double>& g, double eps,
                        const reference::cost_model& cost) {
  const std::vector<double> plan = reference::row_plan(x, y, g, eps, cost);
  double total = 0;
  for (std::int64_t i = 0; i < x.count; ++i) {
    for (std::int64_t j = 0; j < y.count; ++j) total += plan[i * y.count + j] * cost(x, i, y, j);
  }
  return total;
}

std::string describe_case(label_kind kind, bool debias, fs::precision mode, std::uint64_t seed) {
  std::string text(kind == label_kind::euclidean ? "Euclidean W" : "non-Euclidean W");
  text.append(debias ? ", debiased, " : ", plain, ").append(fs::to_string(mode)).append(", seed ");
  return text.append(std::to_string(seed));
}

class LabelCostVsDense : public ::testing::TestWithParam<std::tuple<label_kind, bool, fs::precision>> {};

// 30 alternating iterations (the state after exactly that many is comparable), n = 37, m = 65 (one
// past a key tile), d = 5, L = 7 labels, s = ½, λx = 0.8, λy = 1.5.
TEST_P(LabelCostVsDense, SameIteratesValueAndPrimalCost) {
  const auto [kind, debias, mode] = GetParam();
  const std::uint64_t seed = 4000 + static_cast<std::uint64_t>(kind) * 10 + static_cast<std::uint64_t>(debias);
  const std::int64_t label_count = 7;
  reference::cloud x = reference::random_cloud(37, 5, seed);
  reference::cloud y = reference::random_cloud(65, 5, seed + 1, 1.0, 0.5);
  assign_labels(x, label_count, seed + 2);
  assign_labels(y, label_count, seed + 3);
  reference::label_matrix w = label_matrix_of(kind, label_count, seed + 4);
  if (kind == label_kind::non_euclidean) {
    ASSERT_LT(non_psd_certificate(w), 0);
  }
  w.feature_weight = 0.8;
  w.label_weight = 1.5;
  const double s = 0.5, eps = 1.0;
  const int iterations = 30;
  const reference::cost_model cost(s, &w);
  const reference::solution ref = reference::alternating(x, y, eps, cost, iterations, {}, {}, debias);
  fs::options o = fixed_iterations(iterations, mode);
  o.debias = debias;
  const fs::result r = fs::solver(make_labelled_problem(x, y, w, eps, s), o).solve();
  const std::string where = describe_case(kind, debias, mode, seed);
  const double tol = relative_tolerance(mode);
  EXPECT_EQ(r.iterations, iterations);
  EXPECT_NEAR(r.cost, ref.value, tol * std::max(1.0, std::abs(ref.value))) << where;
  expect_potentials_near(r, ref, x, tol, where);
  if (debias) {
    const double scale = std::max({1.0, max_abs(ref.f_aa), max_abs(ref.g_bb)});
    EXPECT_LT(max_abs_diff(r.f_aa, ref.f_aa), tol * scale) << where << " f_aa";
    EXPECT_LT(max_abs_diff(r.g_bb, ref.g_bb), tol * scale) << where << " g_bb";
  }
  const double primal = reference_primal(x, y, ref.g, eps, cost);
  EXPECT_NEAR(r.primal_cost, primal, tol * std::max(1.0, std::abs(primal))) << where << " primal cost";
}

std::string case_name(const ::testing::TestParamInfo<std::tuple<label_kind, bool, fs::precision>>& info) {
  std::string name(std::get<0>(info.param) == label_kind::euclidean ? "euclidean" : "non_euclidean");
  name.append(std::get<1>(info.param) ? "_debiased_" : "_plain_");
  return name.append(fs::to_string(std::get<2>(info.param)));
}

INSTANTIATE_TEST_SUITE_P(Cases, LabelCostVsDense,
                         ::testing::Combine(::testing::Values(label_kind::euclidean, label_kind::non_euclidean),
                                            ::testing::Bool(),
                                            ::testing::Values(fs::precision::fp64, fs::precision::fp32,
                                                              fs::precision::tf32, fs::precision::bf16)),
                         case_name);

// Converged in fp64, the acceptance criterion: value and potentials within 1e-9 relative.
TEST(LabelCostVsDense, ConvergedFp64WithinOneInABillion) {
  for (label_kind kind : {label_kind::euclidean, label_kind::non_euclidean}) {
    for (bool debias : {false, true}) {
      reference::cloud x = reference::random_cloud(90, 6, 71);
      reference::cloud y = reference::random_cloud(70, 6, 72, 1.0, 0.3);
      assign_labels(x, 10, 73);
      assign_labels(y, 10, 74);
      const reference::label_matrix w = label_matrix_of(kind, 10, 75);
      const double s = 0.5, eps = 1.0;
      const reference::solution ref = reference::alternating(x, y, eps, reference::cost_model(s, &w), 500, {}, {}, debias);
      fs::options o = fixed_iterations(2000, fs::precision::fp64);
      o.tolerance = 1e-13;
      o.debias = debias;
      const fs::result r = fs::solver(make_labelled_problem(x, y, w, eps, s), o).solve();
      const std::string where = describe_case(kind, debias, fs::precision::fp64, 71);
      EXPECT_TRUE(r.converged) << where << " marginal error " << r.marginal_error;
      EXPECT_NEAR(r.cost, ref.value, 1e-9 * std::abs(ref.value)) << where;
      expect_potentials_near(r, ref, x, 1e-9, where);
    }
  }
}

// GeomLoss's symmetric loop with ε-scaling and no given diameter: the schedule starts at
// diameter² = (feature bounding-box diagonal)² + (λy/λx)·max W over the labels present.
TEST(LabelCostVsDense, SymmetricScheduleStartsAtTheLabelledDiameter) {
  reference::cloud x = reference::random_cloud(40, 3, 81);
  reference::cloud y = reference::random_cloud(30, 3, 82, 1.0, 1.0);
  assign_labels(x, 6, 83);
  assign_labels(y, 6, 84);
  reference::label_matrix w = non_euclidean_label_matrix(6, 85);
  w.label_weight = 2.0;
  const double s = 0.5, eps = 0.05;
  fs::options o = fixed_iterations(0, fs::precision::fp64);
  o.solver = fs::solver_kind::symmetric;
  o.scaling = 0.6;
  o.debias = true;
  const fs::result r = fs::solver(make_labelled_problem(x, y, w, eps, s), o).solve();

  double diam2 = 0;
  for (std::int64_t k = 0; k < 3; ++k) {
    double lo = 1e300, hi = -1e300;
    for (const auto* c : {&x, &y}) {
      for (std::int64_t i = 0; i < c->count; ++i) {
        lo = std::min(lo, c->points[i * 3 + k]);
        hi = std::max(hi, c->points[i * 3 + k]);
      }
    }
    diam2 += (hi - lo) * (hi - lo);
  }
  double largest = 0;  // every label 0..5 is present in x or y at these sizes
  for (double v : w.distances) largest = std::max(largest, v);
  diam2 += w.label_weight / w.feature_weight * largest;
  const auto schedule = fs::detail::epsilon_schedule(std::sqrt(diam2), eps, 0.6);
  const reference::solution ref = reference::symmetric(x, y, schedule, reference::cost_model(s, &w), {}, true);
  EXPECT_EQ(r.iterations, static_cast<int>(schedule.size()));
  EXPECT_NEAR(r.cost, ref.value, 1e-10 * std::max(1.0, std::abs(ref.value)));
  for (std::size_t i = 0; i < ref.f.size(); ++i) ASSERT_NEAR(r.f[i], ref.f[i], 1e-10) << i;
}

// A Euclidean W = ‖e_l − e_l'‖² is the plain cost on the features [x_i, e_{l_i}] — whatever basis
// the embedding picks (here with λx = 1, λy = 1).
TEST(LabelCostFacts, EuclideanLabelMatrixEqualsExtraFeatureColumns) {
  const std::int64_t label_count = 5, d = 3;
  reference::cloud x = reference::random_cloud(29, d, 91);
  reference::cloud y = reference::random_cloud(31, d, 92, 1.0, 0.4);
  assign_labels(x, label_count, 93);
  assign_labels(y, label_count, 94);
  const reference::cloud centres = reference::random_cloud(label_count, 3, 95);
  reference::label_matrix w;
  w.count = label_count;
  w.distances.resize(static_cast<std::size_t>(label_count * label_count));
  for (std::int64_t l = 0; l < label_count; ++l) {
    for (std::int64_t k = 0; k < label_count; ++k) w.distances[l * label_count + k] = reference::sq_dist(centres, l, centres, k);
  }
  const auto widen = [&](const reference::cloud& c) {
    reference::cloud wide = c;
    wide.dim = d + 3;
    wide.points.resize(static_cast<std::size_t>(c.count * wide.dim));
    for (std::int64_t i = 0; i < c.count; ++i) {
      for (std::int64_t k = 0; k < d; ++k) wide.points[i * wide.dim + k] = c.points[i * d + k];
      for (std::int64_t k = 0; k < 3; ++k) wide.points[i * wide.dim + d + k] = centres.points[c.labels[i] * 3 + k];
    }
    wide.labels.clear();
    return wide;
  };
  const reference::cloud wide_x = widen(x), wide_y = widen(y);
  fs::options o = fixed_iterations(25, fs::precision::fp64);
  o.debias = true;
  const fs::result labelled = fs::solver(make_labelled_problem(x, y, w, 0.7, 0.5), o).solve();
  const fs::result plain = fs::solver(make_problem(wide_x, wide_y, 0.7, 0.5), o).solve();
  EXPECT_NEAR(labelled.cost, plain.cost, 1e-12 * std::max(1.0, std::abs(plain.cost)));
  EXPECT_LT(max_abs_diff(labelled.f, plain.f), 1e-11);
  EXPECT_LT(max_abs_diff(labelled.g_bb, plain.g_bb), 1e-11);
}

}  // namespace
