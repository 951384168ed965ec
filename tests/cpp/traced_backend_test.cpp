// FLASHSINKHORN_TRACE=1 (core/traced_backend.hpp): the solver prints one timed line per backend
// call to stderr — the plan passes of an HVP by name — and its results do not change.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "hvp_support.hpp"
#include "trace_capture.hpp"

namespace {

using namespace testing_support;

std::vector<double> hvp_of(const reference::cloud& x, const reference::cloud& y, const std::vector<double>& a) {
  fs::solver s(make_problem(x, y, 0.5, 1.0), tight_fp64());
  s.solve();
  return library_hvp(s, x, true, a, tight_hvp());
}

TEST(TracedBackend, PrintsEachCallAndChangesNothing) {
  const reference::cloud x = reference::random_cloud(23, 3, 1), y = reference::random_cloud(17, 3, 2);
  const std::vector<double> a = random_direction(x.count * x.dim, 3);
  expect_traced_run_unchanged([&] { return hvp_of(x, y, a); },
                              {"flashsinkhorn trace: run_block of ", "flashsinkhorn trace: take_error",
                               "flashsinkhorn trace: plan_rows x<-y k=3", "flashsinkhorn trace: plan_rows y<-x k=1",
                               "flashsinkhorn trace: plan_quadratic_rows x<-y k=3", " ms before)\n"},
                              2000);
}

TEST(TracedBackend, ZeroMeansOff) {
  const reference::cloud x = reference::random_cloud(5, 2, 4), y = reference::random_cloud(6, 2, 5);
  ASSERT_EQ(setenv("FLASHSINKHORN_TRACE", "0", 1), 0);
  ::testing::internal::CaptureStderr();
  fs::solver s(make_problem(x, y, 0.5, 1.0), tight_fp64());
  s.solve();
  const std::string log = ::testing::internal::GetCapturedStderr();
  ASSERT_EQ(unsetenv("FLASHSINKHORN_TRACE"), 0);
  EXPECT_EQ(log.find("flashsinkhorn trace"), std::string::npos) << log;
}

}  // namespace
