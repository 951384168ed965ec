// The solve's scalars on the device (solve_summary_launch.hpp).
#include <algorithm>
#include <cub/device/device_reduce.cuh>
#include <cuda/std/functional>
#include <thrust/iterator/counting_iterator.h>

#include "cuda/solve_summary_launch.hpp"
#include "math/point_gradient.hpp"

namespace flashsinkhorn::detail {
namespace {

constexpr int kThreads = 256;

unsigned blocks_for(std::int64_t count) {
  return static_cast<unsigned>(std::max<std::int64_t>(1, (count + kThreads - 1) / kThreads));
}

// w_i·φ(h_i) (core/dual_value.cpp's phi) of index i: the transform of the weighted-φ reduction.
struct weighted_phi_term {
  const double* weights;
  const double* potential;
  double eps;
  double rho;
  __device__ double operator()(std::int64_t i) const {
    const double h = potential[i];
    const double phi = rho > 0 ? (rho + eps / 2) * -expm1(-h / rho) : h;
    return weights[i] * phi;
  }
};

// The temporary storage CUB asks for, in `scratch` (grown after a wait for the work that may still
// read the old one).
cudaError_t reserve_scratch(std::size_t bytes, device_buffer<unsigned char>& scratch, cudaStream_t stream) {
  if (scratch.size() >= bytes) return cudaSuccess;
  const cudaError_t status = cudaStreamSynchronize(stream);
  if (status != cudaSuccess) return status;
  scratch = device_buffer<unsigned char>(bytes, stream);
  return cudaSuccess;
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
  if (status == cudaSuccess) status = reserve_scratch(bytes, scratch, stream);
  if (status != cudaSuccess) return status;
  return cub::DeviceReduce::Sum(scratch.data(), bytes, values, out, count, stream);
}

// One CUB reduction whose transform computes the terms from the indices (no kernel writing them
// first: one launch fewer per sum).
cudaError_t launch_weighted_phi_sum(const double* weights, const double* potential, std::int64_t count, double eps,
                                    double rho, double* out, device_buffer<unsigned char>& scratch,
                                    cudaStream_t stream) {
  const weighted_phi_term term{weights, potential, eps, rho};
  const thrust::counting_iterator<std::int64_t> indices(0);
  std::size_t bytes = 0;
  cudaError_t status = cub::DeviceReduce::TransformReduce(nullptr, bytes, indices, out, count,
                                                          cuda::std::plus<double>{}, term, 0.0, stream);
  if (status == cudaSuccess) status = reserve_scratch(bytes, scratch, stream);
  if (status != cudaSuccess) return status;
  return cub::DeviceReduce::TransformReduce(scratch.data(), bytes, indices, out, count, cuda::std::plus<double>{},
                                            term, 0.0, stream);
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
