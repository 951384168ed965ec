// cpu/denormals_flushed.hpp: a plan pass flushes denormal floats to zero on its threads and gives
// the caller's floating-point mode back. Checked on the calling thread (an OpenMP team's master runs
// the pass's loop too): its MXCSR's mode bits before and after a solve, a gradient and an HVP on the CPU backend
// in fp32 (sharp plans, where the passes meet denormals), and a denormal it computes afterwards.
#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include "cpp/hvp_support.hpp"
#include "cpu/denormals_flushed.hpp"

#if defined(__SSE__)
#include <xmmintrin.h>
#endif

namespace fs = flashsinkhorn;
using namespace testing_support;

namespace {

// The smallest normal float halved: a denormal, unless results are flushed to zero.
float halved_smallest_normal() {
  volatile float smallest = std::numeric_limits<float>::min();
  volatile float half = 0.5f;
  return smallest * half;
}

TEST(DenormalsFlushed, FlushesInsideAndRestoresTheCallersMode) {
  ASSERT_GT(halved_smallest_normal(), 0.0f);
  {
    const fs::detail::denormals_flushed flushed;
#if defined(__SSE__)
    EXPECT_EQ(halved_smallest_normal(), 0.0f);
#endif
  }
  EXPECT_GT(halved_smallest_normal(), 0.0f);
}

TEST(DenormalsFlushed, CpuPassesLeaveTheCallersModeAsTheyFoundIt) {
#if defined(__SSE__)
  constexpr unsigned kMode = ~0x3Fu;  // MXCSR without its sticky exception flags (status, not mode)
  const unsigned before = _mm_getcsr() & kMode;
#endif
  const reference::cloud x = reference::random_cloud(300, 8, 21);
  const reference::cloud y = reference::random_cloud(300, 8, 22);
  fs::options o = fixed_iterations(10, fs::precision::fp32);
  o.device = fs::device_kind::cpu;
  fs::solver s(make_problem(x, y, 0.05, 1.0), o);
  s.solve();
  std::vector<double> gradient(static_cast<std::size_t>(x.count * x.dim));
  s.gradient_x(fs::host_matrix(gradient.data(), x.count, x.dim));
  fs::hvp_options settings;
  settings.max_iterations = 20;
  library_hvp(s, x, true, random_direction(x.count * x.dim, 23), settings);
#if defined(__SSE__)
  EXPECT_EQ(_mm_getcsr() & kMode, before);
#endif
  EXPECT_GT(halved_smallest_normal(), 0.0f);
}

}  // namespace
