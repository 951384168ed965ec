// math::exp2_cubic (the FMA-pipe share of the wgmma softmin's exponentials, FLASHSINKHORN_EXP2=split)
// evaluated on the GPU equals the host evaluation bit for bit — the premise under which
// tests/cpp/exp2_cubic_test.cpp's accuracy and window facts hold for the kernel. Skips without a GPU.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "cuda/cuda_backend.hpp"
#include "math/exp2_cubic.hpp"

namespace {

namespace m = flashsinkhorn::math;

__global__ void exp2_cubic_kernel(const float* t, const float* reference, float* out, int count) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) out[i] = m::exp2_cubic(t[i], m::exp2_cubic_offset(reference[i]));
}

#define CUDA_OK(call) ASSERT_EQ((call), cudaSuccess) << #call

TEST(exp2_cubic_gpu, device_bits_equal_the_host_evaluation) {
  if (flashsinkhorn::detail::cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  // Scores around six references: inside the window (a grid), past both ends, random float bits,
  // ±∞ and NaN.
  std::vector<float> t, reference;
  std::mt19937 rng(3);
  std::uniform_int_distribution<std::uint32_t> bits;
  for (const float ref : {0.f, 96.f, -300.25f, 1234.5f, -5000.f, 20000.f}) {
    for (int i = 0; i <= 40000; ++i) {
      t.push_back(static_cast<float>(ref + (-140.0 + i * (290.0 / 40000))));
      reference.push_back(ref);
    }
    for (int i = 0; i < 40000; ++i) {
      t.push_back(m::float_of_bits(bits(rng)));
      reference.push_back(ref);
    }
    for (const float special : {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                                std::numeric_limits<float>::quiet_NaN()}) {
      t.push_back(special);
      reference.push_back(ref);
    }
  }
  const int count = static_cast<int>(t.size());
  const std::size_t bytes = t.size() * sizeof(float);
  float *d_t = nullptr, *d_reference = nullptr, *d_out = nullptr;
  CUDA_OK(cudaMalloc(&d_t, bytes));
  CUDA_OK(cudaMalloc(&d_reference, bytes));
  CUDA_OK(cudaMalloc(&d_out, bytes));
  CUDA_OK(cudaMemcpy(d_t, t.data(), bytes, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(d_reference, reference.data(), bytes, cudaMemcpyHostToDevice));
  exp2_cubic_kernel<<<(count + 255) / 256, 256>>>(d_t, d_reference, d_out, count);
  CUDA_OK(cudaGetLastError());
  std::vector<float> device(t.size());
  CUDA_OK(cudaMemcpy(device.data(), d_out, bytes, cudaMemcpyDeviceToHost));
  CUDA_OK(cudaFree(d_t));
  CUDA_OK(cudaFree(d_reference));
  CUDA_OK(cudaFree(d_out));
  int mismatches = 0;
  for (int i = 0; i < count; ++i) {
    const float host = m::exp2_cubic(t[i], m::exp2_cubic_offset(reference[i]));
    if (m::float_bits(host) != m::float_bits(device[i]) && mismatches++ < 5)
      ADD_FAILURE() << "t " << t[i] << " reference " << reference[i] << ": host " << host << ", device " << device[i];
  }
  EXPECT_EQ(mismatches, 0) << "of " << count;
}

}  // namespace
