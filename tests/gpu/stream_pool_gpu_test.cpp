// The backends' stream pool (cuda/stream_pool.hpp): a stream given back is handed out again, two
// holders never share one, a stream given back while it is being captured is destroyed rather than
// kept, and solvers in a row (each taking and giving back its stream) compute the same result.
// Skips without a GPU.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <cmath>

#include "cpp/test_problems.hpp"
#include "cuda/cuda_stream.hpp"
#include "cuda/stream_pool.hpp"
#include "flashsinkhorn/flashsinkhorn.hpp"

namespace fs = flashsinkhorn;
using namespace flashsinkhorn::detail;

namespace {

TEST(StreamPool, GivesBackTheSameStreamAndNeverSharesOne) {
  if (!fs::cuda_available()) GTEST_SKIP() << "no CUDA device";
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  cudaStream_t first = acquire_stream(0);
  cudaStream_t second = acquire_stream(0);
  EXPECT_NE(first, second) << "two holders at once get two streams";
  unsigned int flags = 0;
  ASSERT_EQ(cudaStreamGetFlags(first, &flags), cudaSuccess);
  EXPECT_EQ(flags, static_cast<unsigned int>(cudaStreamNonBlocking));
  release_stream(0, second);
  EXPECT_EQ(acquire_stream(0), second) << "a stream given back is handed out again";
  release_stream(0, second);
  release_stream(0, first);
  {
    const cuda_stream owned = cuda_stream::create();
    EXPECT_TRUE(owned.get() == first || owned.get() == second) << "cuda_stream::create takes from the pool";
  }
}

TEST(StreamPool, AStreamStillCapturingIsNotKept) {
  if (!fs::cuda_available()) GTEST_SKIP() << "no CUDA device";
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  cudaStream_t stream = acquire_stream(0);
  ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  release_stream(0, stream);  // destroyed: a capture in progress must not reach the next holder
  cudaStream_t next = acquire_stream(0);
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusActive;
  ASSERT_EQ(cudaStreamIsCapturing(next, &status), cudaSuccess);
  EXPECT_EQ(status, cudaStreamCaptureStatusNone);
  release_stream(0, next);
  (void)cudaGetLastError();
}

TEST(StreamPool, SolversInARowComputeTheSameValue) {
  if (!fs::cuda_available()) GTEST_SKIP() << "no CUDA device";
  const reference::cloud x = reference::random_cloud(700, 5, 31);
  const reference::cloud y = reference::random_cloud(650, 5, 32, 1.0, 0.5);
  fs::options o;
  o.device = fs::device_kind::cuda;
  o.precision = fs::precision::fp32;
  o.max_iterations = 30;
  o.tolerance = 0;
  const double first = fs::solver(testing_support::make_problem(x, y, 0.5, 1.0), o).solve().cost;
  for (int k = 0; k < 3; ++k) {
    EXPECT_NEAR(fs::solver(testing_support::make_problem(x, y, 0.5, 1.0), o).solve().cost, first,
                1e-6 * std::abs(first))
        << "solver " << k + 2;
  }
}

}  // namespace
