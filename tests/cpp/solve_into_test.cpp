// solver::solve_into (solver.hpp) on host views: the same solve as solve(), its potentials and value
// written into the caller's views (dtype and stride honoured), the result's vectors left empty; bad views
// named; the CPU backend counts no host↔device copy (transfers()). The CUDA side of solve_into is
// tests/gpu/device_inputs_gpu_test.cpp.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "cpp/test_problems.hpp"
#include "flashsinkhorn/flashsinkhorn.hpp"

namespace fs = flashsinkhorn;
using testing_support::max_abs_diff;

namespace {

TEST(SolveInto, WritesTheSamePotentialsAsSolveIntoTheViews) {
  const reference::cloud x = reference::random_cloud(37, 3, 1);
  const reference::cloud y = reference::random_cloud(29, 3, 2, 1.0, 0.5);
  for (bool debias : {false, true}) {
    fs::options o = testing_support::fixed_iterations(30, fs::precision::fp64);
    o.debias = debias;
    const fs::problem p = testing_support::make_problem(x, y, 0.3, 1.0);
    const fs::result want = fs::solver(p, o).solve();
    // f as float32 with stride 2, g float64 contiguous, the debiasing potentials float64.
    std::vector<float> f(2 * 37, -1.0f);
    std::vector<double> g(29), f_aa(37), g_bb(29);
    fs::potential_views out;
    out.f = {f.data(), 37, 2, fs::dtype::float32, fs::memory_space::host, 0};
    out.g = fs::host_vector(g.data(), 29);
    out.f_aa = fs::host_vector(f_aa.data(), 37);
    out.g_bb = fs::host_vector(g_bb.data(), 29);
    float value = -1.0f;
    out.cost = fs::host_vector(&value, 1);
    fs::solver s(p, o);
    const fs::result got = s.solve_into(out);
    EXPECT_TRUE(got.f.empty() && got.g.empty() && got.f_aa.empty() && got.g_bb.empty());
    EXPECT_EQ(got.cost, want.cost);
    EXPECT_EQ(got.primal_cost, want.primal_cost);
    EXPECT_EQ(got.iterations, want.iterations);
    EXPECT_EQ(value, static_cast<float>(want.cost)) << "the value, rounded once to the view's dtype";
    for (int i = 0; i < 37; ++i) {
      EXPECT_EQ(f[2 * i], static_cast<float>(want.f[i])) << i;
      EXPECT_EQ(f[2 * i + 1], -1.0f) << "the stride's gaps are not written";
    }
    EXPECT_EQ(max_abs_diff(g, want.g), 0.0);
    if (debias) {
      EXPECT_EQ(max_abs_diff(f_aa, want.f_aa), 0.0);
      EXPECT_EQ(max_abs_diff(g_bb, want.g_bb), 0.0);
    }
    const fs::transfer_statistics t = s.transfers();
    EXPECT_EQ(t.host_to_device_copies + t.device_to_host_copies, 0) << "the CPU backend copies nothing";
  }
}

TEST(SolveInto, NamesAMissingOrMisSizedOutput) {
  const reference::cloud x = reference::random_cloud(10, 2, 3);
  const reference::cloud y = reference::random_cloud(8, 2, 4);
  fs::solver s(testing_support::make_problem(x, y, 0.5, 1.0), testing_support::fixed_iterations(5, fs::precision::fp64));
  std::vector<double> f(10), g(7);
  try {
    s.solve_into({fs::host_vector(f.data(), 10), fs::host_vector(g.data(), 7), {}, {}, {}});
    FAIL() << "a g of 7 elements for 8 points was accepted";
  } catch (const fs::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), "solve_into: the output for g has 7 elements, expected 8");
  }
  std::vector<double> g8(8), two_values(2);
  try {
    s.solve_into({fs::host_vector(f.data(), 10), fs::host_vector(g8.data(), 8), {}, {},
                  fs::host_vector(two_values.data(), 2)});
    FAIL() << "a cost view of 2 elements was accepted";
  } catch (const fs::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), "solve_into: the output for cost has 2 elements, expected 1");
  }
  try {
    s.solve_into({{}, fs::host_vector(g.data(), 7), {}, {}, {}});
    FAIL() << "a missing f was accepted";
  } catch (const fs::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), "solve_into: the output for f has no data");
  }
}

}  // namespace
