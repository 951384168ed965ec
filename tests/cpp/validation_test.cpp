// Bad input: every case throws invalid_argument whose message names the problem.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>

#include "test_problems.hpp"

namespace fs = flashsinkhorn;
using testing_support::make_problem;

namespace {

struct fixture {
  reference::cloud x = reference::random_cloud(5, 3, 1);
  reference::cloud y = reference::random_cloud(4, 3, 2);
};

void expect_invalid(const std::function<void(fs::problem&, fs::options&)>& spoil, const char* keyword) {
  fixture data;
  fs::problem p = make_problem(data.x, data.y, 0.1, 1.0);
  fs::options o;
  o.device = fs::device_kind::cpu;
  spoil(p, o);
  try {
    fs::solver(p, o).solve();
    FAIL() << "expected invalid_argument mentioning '" << keyword << "'";
  } catch (const fs::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(keyword), std::string::npos) << "message: " << e.what();
  }
}

}  // namespace

TEST(Validation, NanInX) {
  std::vector<double> bad = reference::random_cloud(5, 3, 1).points;
  bad[7] = std::nan("");
  expect_invalid([&](fs::problem& p, fs::options&) { p.x = fs::host_matrix(bad.data(), 5, 3); }, "X contains NaN at row 2, column 1");
}

TEST(Validation, InfInY) {
  std::vector<double> bad = reference::random_cloud(4, 3, 2).points;
  bad[0] = std::numeric_limits<double>::infinity();
  expect_invalid([&](fs::problem& p, fs::options&) { p.y = fs::host_matrix(bad.data(), 4, 3); }, "Y contains Inf");
}

TEST(Validation, NanWeight) {
  std::vector<double> a(5, 0.2);
  a[3] = std::nan("");
  expect_invalid([&](fs::problem& p, fs::options&) { p.a = fs::host_vector(a.data(), 5); }, "a contains NaN at index 3");
}

TEST(Validation, NegativeWeight) {
  std::vector<double> b{0.5, -0.1, 0.3, 0.3};
  expect_invalid([&](fs::problem& p, fs::options&) { p.b = fs::host_vector(b.data(), 4); }, "b has a negative weight");
}

TEST(Validation, AllZeroWeights) {
  std::vector<double> a(5, 0.0);
  expect_invalid([&](fs::problem& p, fs::options&) { p.a = fs::host_vector(a.data(), 5); }, "all weights are zero");
}

TEST(Validation, WeightsOfWrongLength) {
  std::vector<double> a(6, 1.0);
  expect_invalid([&](fs::problem& p, fs::options&) { p.a = fs::host_vector(a.data(), 6); }, "a has 6 weights but X has 5 points");
}

TEST(Validation, MismatchedDimension) {
  std::vector<double> y(8, 1.0);
  expect_invalid([&](fs::problem& p, fs::options&) { p.y = fs::host_matrix(y.data(), 4, 2); }, "X has dimension d = 3 but Y has d = 2");
}

TEST(Validation, EmptyCloud) {
  expect_invalid([&](fs::problem& p, fs::options&) { p.x.rows = 0; p.a = {}; }, "X is empty");
}

TEST(Validation, EpsNotPositiveOrNotFinite) {
  for (double eps : {0.0, -1.0, std::nan(""), std::numeric_limits<double>::infinity()}) {
    expect_invalid([&](fs::problem& p, fs::options&) { p.eps = eps; }, "eps must be a positive finite number");
  }
}

TEST(Validation, OptionsOutOfRange) {
  expect_invalid([](fs::problem&, fs::options& o) { o.scaling = 1.5; }, "scaling must lie in (0, 1)");
  expect_invalid([](fs::problem&, fs::options& o) { o.check_every = 0; }, "check_every");
  expect_invalid([](fs::problem&, fs::options& o) { o.tolerance = -1; }, "tolerance");
  expect_invalid([](fs::problem&, fs::options& o) { o.reach_x = -2; }, "reach_x");
  expect_invalid([](fs::problem&, fs::options& o) { o.max_iterations = 0; }, "max_iterations");
  expect_invalid([](fs::problem& p, fs::options&) { p.cost_scale = 0; }, "cost_scale");
}

TEST(Validation, UnequalMassesWithoutNormalisation) {
  std::vector<double> a(5, 1.0);
  expect_invalid([&](fs::problem& p, fs::options& o) { p.a = fs::host_vector(a.data(), 5); o.normalize_weights = false; }, "equal masses");
}

TEST(Validation, CosineCostWithAZeroRow) {
  std::vector<double> x = reference::random_cloud(5, 3, 1).points;
  x[3] = x[4] = x[5] = 0;
  expect_invalid([&](fs::problem& p, fs::options& o) { p.x = fs::host_matrix(x.data(), 5, 3); o.cost = fs::cost_kind::cosine; }, "X row 1 is zero");
}

TEST(Validation, PlanOperationsBeforeSolve) {
  fixture data;
  fs::problem p = make_problem(data.x, data.y, 0.1, 1.0);
  fs::options o;
  o.device = fs::device_kind::cpu;
  fs::solver s(p, o);
  std::vector<double> out(15);
  EXPECT_THROW(s.barycentric_projection(fs::host_matrix(out.data(), 5, 3)), fs::invalid_argument);
}

#ifndef FLASHSINKHORN_TEST_HAS_CUDA
TEST(Validation, CudaRequestedWithoutCudaIsUnsupported) {
  if (fs::cuda_available()) GTEST_SKIP() << "a GPU is present";
  fixture data;
  fs::problem p = make_problem(data.x, data.y, 0.1, 1.0);
  fs::options o;
  o.device = fs::device_kind::cuda;
  EXPECT_THROW(fs::solver(p, o), fs::unsupported);
}
#endif

// The device-memory counters: a negative device is named; without a GPU every count is 0 and the
// reset is a no-op (tests/gpu/device_memory_pool_gpu_test.cpp counts a solver's buffers on one).
TEST(Validation, DeviceMemoryCountersNameABadDeviceAndAreZeroWithoutAGpu) {
  EXPECT_THROW(fs::device_memory(-1), fs::invalid_argument);
  EXPECT_THROW(fs::reset_peak_device_memory(-1), fs::invalid_argument);
  if (fs::cuda_available()) GTEST_SKIP() << "a GPU is present";
  const fs::device_memory_statistics s = fs::device_memory(0);
  EXPECT_EQ(s.in_use, 0u);
  EXPECT_EQ(s.peak_in_use, 0u);
  EXPECT_EQ(s.reserved, 0u);
  EXPECT_NO_THROW(fs::reset_peak_device_memory(0));
}

// The precision modes' names, both ways: every mode round-trips, anything else is rejected.
TEST(PrecisionNames, RoundTripAndRejects) {
  for (const fs::precision mode : {fs::precision::fp32, fs::precision::fp64, fs::precision::tf32, fs::precision::bf16})
    EXPECT_EQ(fs::precision_from_string(fs::to_string(mode)), mode) << fs::to_string(mode);
  EXPECT_EQ(fs::to_string(fs::precision::bf16), "bf16");
  EXPECT_FALSE(fs::precision_from_string("fp16").has_value());
  EXPECT_FALSE(fs::precision_from_string("FP32").has_value());
  EXPECT_FALSE(fs::precision_from_string("").has_value());
}
