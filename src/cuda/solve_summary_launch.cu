// The solve's scalars on the device (solve_summary_launch.hpp).
#include <algorithm>

#include "cuda/solve_summary_launch.hpp"

#include "cuda/block_sum.cuh"
#include "math/dual_phi.hpp"
#include "math/point_gradient.hpp"

namespace flashsinkhorn::detail {
namespace {

constexpr int kThreads = 256;

unsigned blocks_for(std::int64_t count) {
  return static_cast<unsigned>(std::max<std::int64_t>(1, (count + kThreads - 1) / kThreads));
}

// One CTA per sum: Σ_i w_i·φ(h_i) (math/dual_phi.hpp; w_i = 1 without weights).
struct weighted_phi_batch {
  weighted_phi_sum sum[kMaxWeightedPhiSums];
  double eps;
};

__global__ void __launch_bounds__(kBlockSumThreads) weighted_phi_sums_kernel(const weighted_phi_batch batch) {
  const weighted_phi_sum& job = batch.sum[blockIdx.x];
  double partial = 0;
  for (std::int64_t i = threadIdx.x; i < job.count; i += kBlockSumThreads) {
    const double phi = math::dual_phi(job.values[i], batch.eps, job.rho);
    partial += job.weights != nullptr ? job.weights[i] * phi : phi;
  }
  const double total = block_sum(partial);
  if (threadIdx.x == 0) *job.out = total;
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

cudaError_t launch_weighted_phi_sums(const weighted_phi_sum* sums, int count, double eps, cudaStream_t stream) {
  if (count <= 0) return cudaSuccess;
  if (count > kMaxWeightedPhiSums) return cudaErrorInvalidValue;
  weighted_phi_batch batch{};
  for (int k = 0; k < count; ++k) batch.sum[k] = sums[k];
  batch.eps = eps;
  weighted_phi_sums_kernel<<<count, kBlockSumThreads, 0, stream>>>(batch);
  return cudaGetLastError();
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
