// The cosine chain rule on the device (cosine_gradient.hpp): one thread per row.
#include <cuda_runtime.h>

#include <algorithm>
#include <string>

#include "cuda/caller_stream.hpp"
#include "cuda/cosine_gradient.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/device_buffer.hpp"
#include "flashsinkhorn/error.hpp"

namespace flashsinkhorn::detail {
namespace {

constexpr int kThreads = 256;

template <class In, class Out>
__global__ void cosine_chain_rule_kernel(const In* input, std::int64_t input_stride, const double* gradient,
                                         std::int64_t rows, std::int64_t dim, Out* out, std::int64_t out_stride) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= rows) return;
  const In* x = input + i * input_stride;
  const double* g = gradient + i * dim;
  double sq = 0;
  for (std::int64_t c = 0; c < dim; ++c) sq += static_cast<double>(x[c]) * static_cast<double>(x[c]);
  const double norm = sqrt(sq);
  double radial = 0;
  for (std::int64_t c = 0; c < dim; ++c) radial += static_cast<double>(x[c]) / norm * g[c];
  for (std::int64_t c = 0; c < dim; ++c)
    out[i * out_stride + c] = static_cast<Out>((g[c] - radial * static_cast<double>(x[c]) / norm) / norm);
}

template <class In>
void launch_for_output(const In* input, std::int64_t input_stride, const double* gradient,
                       const mutable_matrix_view& out, cudaStream_t stream) {
  const auto blocks = static_cast<unsigned>(std::max<std::int64_t>(1, (out.rows + kThreads - 1) / kThreads));
  if (out.type == dtype::float32)
    cosine_chain_rule_kernel<<<blocks, kThreads, 0, stream>>>(input, input_stride, gradient, out.rows, out.cols,
                                                              static_cast<float*>(out.data), out.row_stride);
  else
    cosine_chain_rule_kernel<<<blocks, kThreads, 0, stream>>>(input, input_stride, gradient, out.rows, out.cols,
                                                              static_cast<double*>(out.data), out.row_stride);
  FS_CUDA_CHECK_LAUNCH();
}

}  // namespace

void cosine_gradient_on_device(const backend& compute, side rows, const matrix_view& input,
                               const mutable_matrix_view& out, std::optional<std::uintptr_t> caller_stream) {
  if (input.space != memory_space::cuda || out.space != memory_space::cuda || input.device != out.device)
    throw invalid_argument("cosine_gradient_on_device: the points and the output must live on the same CUDA device");
  if (input.rows != out.rows || input.cols != out.cols)
    throw invalid_argument("cosine_gradient_on_device: the points and the output have different shapes");
  FS_CUDA_CHECK(cudaSetDevice(out.device));
  const cudaStream_t stream = stream_of(caller_stream);
  // ∇_x̂ in float64 first (the backend's device copy, on its own stream, which it waits for). The
  // buffer is ordered on the caller's stream: complete before the backend's stream writes it.
  device_buffer<double> gradient(static_cast<std::size_t>(out.rows * out.cols), stream);
  FS_CUDA_CHECK(cudaStreamSynchronize(stream));
  compute.read_point_gradient(
      rows, {gradient.data(), out.rows, out.cols, out.cols, dtype::float64, memory_space::cuda, out.device});
  if (input.type == dtype::float32)
    launch_for_output(static_cast<const float*>(input.data), input.row_stride, gradient.data(), out, stream);
  else
    launch_for_output(static_cast<const double*>(input.data), input.row_stride, gradient.data(), out, stream);
  FS_CUDA_CHECK(cudaStreamSynchronize(stream));  // `gradient` is freed on return
}

}  // namespace flashsinkhorn::detail
