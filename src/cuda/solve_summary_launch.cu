// The solve's scalars on the device (solve_summary_launch.hpp).
#include <algorithm>
#include <cub/device/device_reduce.cuh>

#include "cuda/solve_summary_launch.hpp"
#include "math/point_gradient.hpp"

namespace flashsinkhorn::detail {
namespace {

constexpr int kThreads = 256;

unsigned blocks_for(std::int64_t count) {
  return static_cast<unsigned>(std::max<std::int64_t>(1, (count + kThreads - 1) / kThreads));
}

// terms_i = w_i·φ(h_i) (core/dual_value.cpp's phi).
__global__ void weighted_phi_kernel(const double* weights, const double* potential, std::int64_t count, double eps,
                                    double rho, double* terms) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= count) return;
  const double h = potential[i];
  const double phi = rho > 0 ? (rho + eps / 2) * -expm1(-h / rho) : h;
  terms[i] = weights[i] * phi;
}

__global__ void shifted_kernel(const double* g, std::int64_t count, const double* numerator, const double* denominator,
                               double* shifted) {
  const std::int64_t j = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= count) return;
  shifted[j] = g[j] - *numerator / *denominator;
}

__global__ void primal_row_terms_kernel(const primal_row_terms_args a) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= a.rows) return;
  const double potential = a.unbalanced ? a.potential[i] : 0.0;
  const double m = math::plan_row_mass(a.weights[i], a.unbalanced, potential, a.eps, a.lse[i]);
  if (m == 0) {
    a.transport[i] = a.entropy[i] = a.mass[i] = 0;
    return;
  }
  const double mean_g = a.weighted[i] + *a.shift_numerator / *a.shift_denominator;
  a.transport[i] = m * a.cost[i];
  a.entropy[i] = m * (log(m / a.weights[i]) - a.lse[i] + (mean_g - a.cost[i]) / a.eps);
  a.mass[i] = m;
}

}  // namespace

cudaError_t launch_sum(const double* values, std::int64_t count, double* out, device_buffer<unsigned char>& scratch,
                       cudaStream_t stream) {
  std::size_t bytes = 0;
  cudaError_t status = cub::DeviceReduce::Sum(nullptr, bytes, values, out, count, stream);
  if (status != cudaSuccess) return status;
  if (scratch.size() < bytes) {
    status = cudaStreamSynchronize(stream);  // the old scratch may still be read
    if (status != cudaSuccess) return status;
    scratch = device_buffer<unsigned char>(bytes, stream);
  }
  return cub::DeviceReduce::Sum(scratch.data(), bytes, values, out, count, stream);
}

cudaError_t launch_weighted_phi_sum(const double* weights, const double* potential, std::int64_t count, double eps,
                                    double rho, double* out, device_buffer<unsigned char>& scratch,
                                    cudaStream_t stream) {
  // The terms live in the front of the scratch, CUB's temporary storage after them.
  const std::size_t term_bytes = static_cast<std::size_t>(count) * sizeof(double);
  std::size_t bytes = 0;
  cudaError_t status = cub::DeviceReduce::Sum(nullptr, bytes, static_cast<const double*>(nullptr), out, count, stream);
  if (status != cudaSuccess) return status;
  const std::size_t aligned_terms = (term_bytes + 255) / 256 * 256;
  if (scratch.size() < aligned_terms + bytes) {
    status = cudaStreamSynchronize(stream);
    if (status != cudaSuccess) return status;
    scratch = device_buffer<unsigned char>(aligned_terms + bytes, stream);
  }
  auto* terms = reinterpret_cast<double*>(scratch.data());
  weighted_phi_kernel<<<blocks_for(count), kThreads, 0, stream>>>(weights, potential, count, eps, rho, terms);
  status = cudaGetLastError();
  if (status != cudaSuccess) return status;
  return cub::DeviceReduce::Sum(scratch.data() + aligned_terms, bytes, terms, out, count, stream);
}

cudaError_t launch_shifted(const double* g, std::int64_t count, const double* numerator, const double* denominator,
                           double* shifted, cudaStream_t stream) {
  shifted_kernel<<<blocks_for(count), kThreads, 0, stream>>>(g, count, numerator, denominator, shifted);
  return cudaGetLastError();
}

cudaError_t launch_primal_row_terms(const primal_row_terms_args& args, cudaStream_t stream) {
  primal_row_terms_kernel<<<blocks_for(args.rows), kThreads, 0, stream>>>(args);
  return cudaGetLastError();
}

}  // namespace flashsinkhorn::detail
