// The device memory pool (cuda/device_memory_pool.hpp): solvers take their buffers from one pool
// per device and give them back on destruction; a second solver of the same size is served from
// what the first freed (the pool does not grow) and computes the same result (to the order of
// float atomics); the cache can be
// given back; device_buffers on different streams and of odd sizes round-trip their contents.
// Skips without a GPU.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "cpp/test_problems.hpp"
#include "cuda/cuda_stream.hpp"
#include "cuda/device_buffer.hpp"
#include "cuda/device_memory_pool.hpp"
#include "flashsinkhorn/flashsinkhorn.hpp"

namespace fs = flashsinkhorn;
using namespace flashsinkhorn::detail;

namespace {

fs::result solve_on_gpu(const reference::cloud& x, const reference::cloud& y) {
  fs::options o;
  o.device = fs::device_kind::cuda;
  o.precision = fs::precision::tf32;
  o.max_iterations = 20;
  o.tolerance = 0;
  return fs::solver(testing_support::make_problem(x, y, 0.5, 1.0), o).solve();
}

// Why device 0 cannot run the pool tests (null: it can; then it is the current device). A device
// that is visible but fails the query is a failure, not a skip.
const char* why_no_pool() {
  if (!fs::cuda_available()) return "no CUDA device";
  int supported = 0;
  if (cudaSetDevice(0) != cudaSuccess ||
      cudaDeviceGetAttribute(&supported, cudaDevAttrMemoryPoolsSupported, 0) != cudaSuccess) {
    ADD_FAILURE() << "device 0 is visible but cannot be queried";
    return "device 0 cannot be queried";
  }
  return supported == 0 ? "device 0 has no memory pools (cudaMalloc is used)" : nullptr;
}

TEST(DeviceMemoryPool, SolversReuseWhatTheirPredecessorFreed) {
  if (const char* why = why_no_pool()) GTEST_SKIP() << why;
  const reference::cloud x = reference::random_cloud(3001, 16, 1);
  const reference::cloud y = reference::random_cloud(2503, 16, 2);
  const fs::result first = solve_on_gpu(x, y);  // the solver is destroyed on return
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::size_t after_first = pooled_bytes_reserved();
  EXPECT_GT(after_first, std::size_t{0}) << "the solver's buffers did not come from the pool";
  for (int call = 0; call < 3; ++call) {
    const fs::result again = solve_on_gpu(x, y);
    // Same kernels on the same inputs; only the order of float atomics may differ.
    EXPECT_NEAR(again.cost, first.cost, 1e-6 * (1 + std::abs(first.cost))) << "call " << call;
    EXPECT_LT(testing_support::max_abs_diff(again.f, first.f), 1e-6 * (1 + std::abs(first.cost))) << "call " << call;
  }
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(pooled_bytes_reserved(), after_first) << "same-size solvers made the pool grow";
  fs::release_cached_device_memory();
  EXPECT_LT(pooled_bytes_reserved(), after_first) << "nothing was given back";
  const fs::result after_release = solve_on_gpu(x, y);
  EXPECT_NEAR(after_release.cost, first.cost, 1e-6 * (1 + std::abs(first.cost)));
}

// The public counters (flashsinkhorn::device_memory): a live solver's buffers are in use, the peak
// keeps them after the solver is gone, and a reset restarts the peak from what is in use then.
TEST(DeviceMemoryPool, CountersSeeALiveSolverAndKeepItsPeak) {
  if (const char* why = why_no_pool()) GTEST_SKIP() << why;
  const reference::cloud x = reference::random_cloud(3001, 16, 3);
  const reference::cloud y = reference::random_cloud(2503, 16, 4);
  (void)solve_on_gpu(x, y);  // makes the pool
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::size_t idle = fs::device_memory(0).in_use;
  fs::reset_peak_device_memory(0);
  EXPECT_EQ(fs::device_memory(0).peak_in_use, idle);
  std::size_t live = 0;
  {
    fs::options o;
    o.device = fs::device_kind::cuda;
    o.precision = fs::precision::tf32;
    o.max_iterations = 5;
    o.tolerance = 0;
    fs::solver s(testing_support::make_problem(x, y, 0.5, 1.0), o);
    (void)s.solve();
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    live = fs::device_memory(0).in_use;
    // At least the two clouds' tf32 storage (16 floats a row) is the solver's.
    EXPECT_GE(live, idle + (3001 + 2503) * 16 * sizeof(float));
    EXPECT_GE(fs::device_memory(0).peak_in_use, live);
    EXPECT_GE(fs::device_memory(0).reserved, live);
  }
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const fs::device_memory_statistics after = fs::device_memory(0);
  EXPECT_EQ(after.in_use, idle) << "the solver's buffers went back to the pool";
  EXPECT_GE(after.peak_in_use, live);
  fs::reset_peak_device_memory(0);
  EXPECT_EQ(fs::device_memory(0).peak_in_use, idle);
}

TEST(DeviceMemoryPool, BuffersOnTwoStreamsKeepTheirContents) {
  if (!fs::cuda_available()) GTEST_SKIP() << "no CUDA device";
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  const cuda_stream a = cuda_stream::create(), b = cuda_stream::create();
  const auto round_trip = [](const std::vector<std::int32_t>& host, device_buffer<std::int32_t>& buffer,
                             cudaStream_t stream) {
    std::vector<std::int32_t> back(host.size());
    EXPECT_EQ(cudaMemcpyAsync(buffer.data(), host.data(), buffer.bytes(), cudaMemcpyHostToDevice, stream), cudaSuccess);
    EXPECT_EQ(cudaMemcpyAsync(back.data(), buffer.data(), buffer.bytes(), cudaMemcpyDeviceToHost, stream), cudaSuccess);
    return back;
  };
  // Sizes freed and reallocated on alternating streams, so that blocks move between them.
  for (const std::size_t count : {std::size_t{1}, std::size_t{7}, std::size_t{1} << 20, (std::size_t{1} << 20) + 3}) {
    std::vector<std::int32_t> ones(count), twos(count);
    for (std::size_t i = 0; i < count; ++i) {
      ones[i] = static_cast<std::int32_t>(i * 2654435761u);
      twos[i] = static_cast<std::int32_t>(~(i * 40503u));
    }
    device_buffer<std::int32_t> on_a(count, a.get()), on_b(count, b.get());
    const std::vector<std::int32_t> back_a = round_trip(ones, on_a, a.get());
    const std::vector<std::int32_t> back_b = round_trip(twos, on_b, b.get());
    ASSERT_EQ(cudaStreamSynchronize(a.get()), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(b.get()), cudaSuccess);
    EXPECT_EQ(back_a, ones) << count;
    EXPECT_EQ(back_b, twos) << count;
  }
}

}  // namespace
