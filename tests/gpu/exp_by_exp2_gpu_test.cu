// math::exp_by_exp2 evaluated on the GPU (2^f by the MUFU's ex2.approx) against the host evaluation
// (2^f by std::exp2): the float64 reduction and scaling are the same instructions on both, so the two
// differ only by ex2.approx's error (≤ 2⁻²² relative) — the premise under which
// tests/cpp/exp_by_exp2_test.cpp's accuracy and range facts hold for the plan passes' weights —
// and equal on the range's edges and the special values. Skips without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "cuda/cuda_backend.hpp"
#include "math/exp_by_exp2.hpp"

namespace {

namespace m = flashsinkhorn::math;

__global__ void exp_by_exp2_kernel(const double* x, double* out, int count) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) out[i] = m::exp_by_exp2(x[i]);
}

#define CUDA_OK(call) ASSERT_EQ((call), cudaSuccess) << #call

TEST(exp_by_exp2_gpu, device_within_the_mufu_error_of_the_host_evaluation) {
  if (flashsinkhorn::detail::cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  // A grid over the range, random arguments, the range's edges and the special values.
  std::vector<double> x;
  for (int i = 0; i <= 200000; ++i) x.push_back(-720.0 + i * (1440.0 / 200000));
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> small(-60.0, 0.0);
  for (int i = 0; i < 200000; ++i) x.push_back(small(rng));
  const double inf = std::numeric_limits<double>::infinity();
  for (const double special : {0.0, -0.0, inf, -inf, std::numeric_limits<double>::quiet_NaN(), 1e300, -1e300}) {
    x.push_back(special);
  }
  const int count = static_cast<int>(x.size());
  const std::size_t bytes = x.size() * sizeof(double);
  double *d_x = nullptr, *d_out = nullptr;
  CUDA_OK(cudaMalloc(&d_x, bytes));
  CUDA_OK(cudaMalloc(&d_out, bytes));
  CUDA_OK(cudaMemcpy(d_x, x.data(), bytes, cudaMemcpyHostToDevice));
  exp_by_exp2_kernel<<<(count + 255) / 256, 256>>>(d_x, d_out, count);
  CUDA_OK(cudaGetLastError());
  std::vector<double> device(x.size());
  CUDA_OK(cudaMemcpy(device.data(), d_out, bytes, cudaMemcpyDeviceToHost));
  CUDA_OK(cudaFree(d_x));
  CUDA_OK(cudaFree(d_out));
  int mismatches = 0;
  double worst = 0;
  for (int i = 0; i < count; ++i) {
    const double host = m::exp_by_exp2(x[i]);
    const bool both_nan = std::isnan(host) && std::isnan(device[i]);
    const bool exact_case = host == 0.0 || std::isinf(host) || std::isnan(host);  // the selects, not 2^f
    if (both_nan) continue;
    if (exact_case ? device[i] != host : !(std::abs(device[i] - host) <= 0x1p-21 * host)) {
      if (mismatches++ < 5) ADD_FAILURE() << "x " << x[i] << ": host " << host << ", device " << device[i];
    } else if (!exact_case) {
      worst = std::max(worst, std::abs(device[i] - host) / host);
    }
    if (!exact_case && !both_nan) {
      EXPECT_LE(std::abs(device[i] - std::exp(x[i])), m::exp_by_exp2_range::kRelativeError * std::exp(x[i]))
          << "x " << x[i];
    }
  }
  EXPECT_EQ(mismatches, 0) << "of " << count;
  RecordProperty("worst_relative_difference", std::to_string(worst));
}

}  // namespace
