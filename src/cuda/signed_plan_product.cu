// Signed plan products through softmin half-steps (signed_plan_product.hpp).
#include <cmath>
#include <utility>

#include "cuda/signed_plan_product.hpp"

namespace flashsinkhorn::detail {
namespace {

constexpr int kThreads = 256;
// ln τ, τ = 1e-300: the floor of each half of v (see the header).
constexpr double kLogFloor = -690.7755278982137;

unsigned blocks_for(std::int64_t count) { return static_cast<unsigned>((count + kThreads - 1) / kThreads); }

// plus_j = log w_j + ln max(v_j, τ), minus_j = log w_j + ln max(−v_j, τ).
__global__ void split_log_weights_kernel(double* plus, double* minus, const double* log_weights, const double* v,
                                         std::int64_t count) {
  const std::int64_t j = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= count) return;
  const double value = v[j];
  plus[j] = log_weights[j] + (value > 0 ? fmax(log(value), kLogFloor) : kLogFloor);
  minus[j] = log_weights[j] + (value < 0 ? fmax(log(-value), kLogFloor) : kLogFloor);
}

// out_i = scale_i·(exp((T⁰_i − T⁺_i)/ε) − exp((T⁰_i − T⁻_i)/ε)).
__global__ void combine_halves_kernel(double* out, const double* scale, const double* reference, const double* plus,
                                      const double* minus, double inverse_eps, std::int64_t count) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= count) return;
  const double value = exp((reference[i] - plus[i]) * inverse_eps) - exp((reference[i] - minus[i]) * inverse_eps);
  out[i] = scale != nullptr ? scale[i] * value : value;
}

double* grown(device_buffer<double>& buffer, std::int64_t count) {
  if (buffer.size() < static_cast<std::size_t>(count)) {
    buffer = device_buffer<double>();
    buffer = device_buffer<double>(static_cast<std::size_t>(count));
  }
  return buffer.data();
}

// The pass as a plain half-step into `out`: T = −ε·LSE, no damping, blend or error.
softmin_launch_args half_step(softmin_launch_args pass, double* out) {
  pass.previous = nullptr;
  pass.out = out;
  pass.damping = 1;
  pass.blend = 1;
  pass.accumulate_error = false;
  return pass;
}

}  // namespace

cudaError_t enqueue_reference_half_step(precision mode, const softmin_launch_args& pass, double* reference,
                                        cudaStream_t stream) {
  return launch_softmin(mode, half_step(pass, reference), stream);
}

cudaError_t enqueue_signed_plan_product(precision mode, const softmin_launch_args& pass, const double* reference,
                                        const double* v, const double* scale, double* out,
                                        signed_product_scratch& scratch, cudaStream_t stream) {
  const std::int64_t keys = pass.keys.count, rows = pass.rows.count;
  if (rows <= 0 || keys <= 0) return cudaSuccess;
  double* plus_weights = grown(scratch.log_weights_plus, keys);
  double* minus_weights = grown(scratch.log_weights_minus, keys);
  double* plus = grown(scratch.half_plus, rows);
  double* minus = grown(scratch.half_minus, rows);
  split_log_weights_kernel<<<blocks_for(keys), kThreads, 0, stream>>>(plus_weights, minus_weights,
                                                                      pass.keys.log_weights, v, keys);
  cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess) return status;
  for (const auto& [log_weights, half] : {std::pair{plus_weights, plus}, std::pair{minus_weights, minus}}) {
    softmin_launch_args shifted = half_step(pass, half);
    shifted.keys.log_weights = log_weights;
    status = launch_softmin(mode, shifted, stream);
    if (status != cudaSuccess) return status;
  }
  combine_halves_kernel<<<blocks_for(rows), kThreads, 0, stream>>>(out, scale, reference, plus, minus, 1.0 / pass.eps,
                                                                   rows);
  return cudaGetLastError();
}

}  // namespace flashsinkhorn::detail
