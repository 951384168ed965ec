// Runs a computation twice, without FLASHSINKHORN_TRACE and with it set to 1 (core/traced_backend.hpp),
// capturing the second run's stderr: the trace tests compare the two results and read the log.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <initializer_list>
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

// `compute` run plain and traced (run_plain_and_traced): the traced run returns what the plain one
// does, and each of `calls` appears in its log (the log's first `shown` characters printed where one
// is missing).
template <class Compute>
void expect_traced_run_unchanged(Compute compute, std::initializer_list<const char*> calls, std::size_t shown) {
  const auto runs = run_plain_and_traced(compute);
  EXPECT_EQ(runs.traced, runs.plain);
  for (const char* call : calls)
    EXPECT_NE(runs.log.find(call), std::string::npos) << call << " missing from:\n" << runs.log.substr(0, shown);
}

}  // namespace testing_support
