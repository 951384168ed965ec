// Bad label costs: every case throws invalid_argument (the cosine cost: unsupported) whose message
// names the problem.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>

#include "label_problems.hpp"

namespace fs = flashsinkhorn;
using namespace testing_support;

namespace {

// X: 5 points, Y: 4 points, L = 3 labels, W a valid label distance matrix.
struct labelled_fixture {
  reference::cloud x = reference::random_cloud(5, 3, 1);
  reference::cloud y = reference::random_cloud(4, 3, 2);
  reference::label_matrix w = non_euclidean_label_matrix(3, 3);
  labelled_fixture() {
    x.labels = {0, 1, 2, 1, 0};
    y.labels = {2, 2, 0, 1};
  }
};

void expect_rejected(const std::function<void(fs::problem&, fs::options&, labelled_fixture&)>& spoil, const char* keyword) {
  labelled_fixture data;
  fs::problem p = make_labelled_problem(data.x, data.y, data.w, 0.5, 1.0);
  fs::options o;
  o.device = fs::device_kind::cpu;
  o.max_iterations = 3;
  spoil(p, o, data);
  try {
    fs::solver(p, o).solve();
    FAIL() << "expected invalid_argument mentioning '" << keyword << "'";
  } catch (const fs::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(keyword), std::string::npos) << "message: " << e.what();
  }
}

}  // namespace

TEST(LabelValidation, TheFixtureItselfSolves) {
  labelled_fixture data;
  fs::options o;
  o.device = fs::device_kind::cpu;
  o.max_iterations = 3;
  EXPECT_NO_THROW(fs::solver(make_labelled_problem(data.x, data.y, data.w, 0.5, 1.0), o).solve());
}

TEST(LabelValidation, LabelOutOfRange) {
  expect_rejected([](fs::problem&, fs::options&, labelled_fixture& d) { d.x.labels[3] = 3; },
                  "x_labels has label 3 at index 3, outside [0, L) with L = 3");
  expect_rejected([](fs::problem&, fs::options&, labelled_fixture& d) { d.y.labels[0] = -1; },
                  "y_labels has label -1 at index 0");
}

TEST(LabelValidation, LabelArraysOfWrongLength) {
  expect_rejected([](fs::problem& p, fs::options&, labelled_fixture& d) { p.labels.x_labels = fs::host_labels(d.x.labels.data(), 4); },
                  "x_labels has 4 labels but X has 5 points");
  expect_rejected([](fs::problem& p, fs::options&, labelled_fixture& d) { p.labels.y_labels = fs::host_labels(d.y.labels.data(), 5); },
                  "y_labels has 5 labels but Y has 4 points");
}

TEST(LabelValidation, PartOfTheLabelCostMissing) {
  expect_rejected([](fs::problem& p, fs::options&, labelled_fixture&) { p.labels.y_labels = {}; }, "x_labels, y_labels and label_distances");
  expect_rejected([](fs::problem& p, fs::options&, labelled_fixture&) { p.labels.label_distances = {}; }, "x_labels, y_labels and label_distances");
}

TEST(LabelValidation, LabelMatrixNotSquare) {
  expect_rejected([](fs::problem& p, fs::options&, labelled_fixture& d) { p.labels.label_distances = fs::host_matrix(d.w.distances.data(), 3, 2); },
                  "square L×L matrix, got 3×2");
}

TEST(LabelValidation, LabelMatrixNotFinite) {
  expect_rejected([](fs::problem&, fs::options&, labelled_fixture& d) { d.w.distances[1] = d.w.distances[3] = std::nan(""); },
                  "label_distances W[0, 1] is NaN");
  expect_rejected([](fs::problem&, fs::options&, labelled_fixture& d) { d.w.distances[5] = std::numeric_limits<double>::infinity(); },
                  "label_distances W[1, 2] is Inf");
}

TEST(LabelValidation, LabelMatrixNegative) {
  expect_rejected([](fs::problem&, fs::options&, labelled_fixture& d) { d.w.distances[2] = d.w.distances[6] = -0.5; },
                  "label_distances W[0, 2] = -0.5 is negative");
}

TEST(LabelValidation, LabelMatrixDiagonalNotZero) {
  expect_rejected([](fs::problem&, fs::options&, labelled_fixture& d) { d.w.distances[4] = 0.5; },
                  "label_distances W[1, 1] = 0.5 is not 0");
}

TEST(LabelValidation, LabelMatrixNotSymmetric) {
  expect_rejected([](fs::problem&, fs::options&, labelled_fixture& d) { d.w.distances[1] += 1e-6; },
                  "label_distances is not symmetric: W[0, 1]");
}

// Asymmetry within 1e-9·max|W| is rounding (W computed in two orders): accepted, then symmetrised.
TEST(LabelValidation, RoundingLevelAsymmetryIsAccepted) {
  labelled_fixture data;
  data.w.distances[1] *= 1 + 1e-12;
  data.w.distances[4] = 1e-14;
  fs::options o;
  o.device = fs::device_kind::cpu;
  o.max_iterations = 3;
  EXPECT_NO_THROW(fs::solver(make_labelled_problem(data.x, data.y, data.w, 0.5, 1.0), o).solve());
}

TEST(LabelValidation, WeightsNotPositiveOrNotFinite) {
  for (double bad : {0.0, -1.0, std::nan(""), std::numeric_limits<double>::infinity()}) {
    expect_rejected([&](fs::problem& p, fs::options&, labelled_fixture&) { p.labels.feature_weight = bad; }, "feature_weight (λx)");
    expect_rejected([&](fs::problem& p, fs::options&, labelled_fixture&) { p.labels.label_weight = bad; }, "label_weight (λy)");
  }
}

TEST(LabelValidation, CosineCostWithLabelsIsUnsupported) {
  labelled_fixture data;
  fs::options o;
  o.device = fs::device_kind::cpu;
  o.cost = fs::cost_kind::cosine;
  EXPECT_THROW(fs::solver(make_labelled_problem(data.x, data.y, data.w, 0.5, 1.0), o), fs::unsupported);
}
