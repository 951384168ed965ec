// Runs a computation twice, without FLASHSINKHORN_TRACE and with it set to 1 (core/traced_backend.hpp),
// capturing the second run's stderr: the trace tests compare the two results and read the log.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace testing_support {

template <class Result>
struct traced_runs {
  Result plain, traced;
  std::string log;  // the traced run's stderr
};

template <class Compute>
auto run_plain_and_traced(Compute compute) -> traced_runs<decltype(compute())> {
  traced_runs<decltype(compute())> runs;
  EXPECT_EQ(unsetenv("FLASHSINKHORN_TRACE"), 0);
  runs.plain = compute();
  EXPECT_EQ(setenv("FLASHSINKHORN_TRACE", "1", 1), 0);
  ::testing::internal::CaptureStderr();
  runs.traced = compute();
  runs.log = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(unsetenv("FLASHSINKHORN_TRACE"), 0);
  return runs;
}

}  // namespace testing_support
