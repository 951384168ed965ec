// The vector work of the device-resident projected CG (schur_cg.hpp), mirroring
// core/projected_cg.cpp step for step on float64 m-vectors:
//   start   r = rhs − mean(rhs), z = r/M, p = z, x = 0, rz = rᵀz, ‖r₀‖
//   step    q = c∘p − μ∘t  (t = A_y(w∘A_x(p)), the two plan passes, enqueued before)
//           α = rz / pᵀq (breakdown when pᵀq ≤ 0), x += α·p, r ← r − α·q projected onto 1⊥,
//           stop when ‖r‖ ≤ tolerance·‖r₀‖, else z = r/M, β = rᵀz / rz, p = z + β·p
// With a preconditioner that is itself an iterative solve (sparse_schur.hpp) the step is cut in two
// around it, and β is the flexible (Polak–Ribière) one, which tolerates a preconditioner that is
// not exactly the same linear map at every iteration:
//   advance    α, x += α·p, r_last = r, r ← r − α·q (projected), stop test
//   direction  z (the preconditioner's output, projected), β = zᵀ(r − r_last) / rz (0 at the
//              start), rz = rᵀz, p = z + β·p
// Without projection (a damped S, positive definite) the mean is left in r.
// Each kernel is one CTA striding over the whole vector, so its reductions are deterministic (one
// fixed order) and need no grid-wide synchronisation; the vectors are O(m) next to the O(n·m·d)
// plan passes between them. The scalars stay on the device (schur_cg_state): after a solve
// converges or breaks down, `done` makes later steps no-ops, so the host may enqueue iterations
// ahead and read the state a few iterations late without the GPU ever waiting for it.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace flashsinkhorn::detail::kernels {

inline constexpr int kSchurCgThreads = 1024;

struct schur_cg_state {
  double rz = 0;            // rᵀz of the current residual
  double initial_norm = 0;  // ‖r₀‖₂
  double residual = 0;      // ‖r_k‖₂ / ‖r₀‖₂ (0 when r₀ = 0)
  int iterations = 0;
  int done = 0;       // converged, broke down or r₀ = 0: steps leave everything as it is
  int breakdown = 0;  // stopped on pᵀq ≤ 0
};

struct schur_cg_vectors {
  std::int64_t m = 0;
  const double* column_sums = nullptr;    // c
  const double* column_masses = nullptr;  // μ
  const double* diagonal = nullptr;       // M > 0, the Jacobi preconditioner
  const double* product = nullptr;        // t, the passes' output for the current p
  double* solution = nullptr;             // x
  double* residual = nullptr;             // r
  double* direction = nullptr;            // p
  double* previous_residual = nullptr;    // r of the last iteration: the flexible steps' β only
  double tolerance = 0;
  bool project = true;  // residuals onto 1⊥ (false: a damped, positive definite S)
  schur_cg_state* state = nullptr;
};

// Sums of `count` values per thread over the CTA (the same tree every call); every thread gets the
// totals. Call from all threads, outside divergent code.
template <int kCount>
__device__ void cta_sums(double (&values)[kCount]) {
  __shared__ double partial[kSchurCgThreads / 32][kCount];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
#pragma unroll
  for (int c = 0; c < kCount; ++c)
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2) values[c] += __shfl_xor_sync(0xffffffffu, values[c], offset);
  if (lane == 0)
#pragma unroll
    for (int c = 0; c < kCount; ++c) partial[warp][c] = values[c];
  __syncthreads();
#pragma unroll
  for (int c = 0; c < kCount; ++c) {
    double total = 0;
    for (int w = 0; w < kSchurCgThreads / 32; ++w) total += partial[w][c];
    values[c] = total;
  }
  __syncthreads();  // partial is reused by the next call
}

__global__ void __launch_bounds__(kSchurCgThreads) schur_cg_start_kernel(schur_cg_vectors v, const double* rhs) {
  double sums[1] = {0};
  for (std::int64_t j = threadIdx.x; j < v.m; j += kSchurCgThreads) sums[0] += rhs[j];
  cta_sums(sums);
  const double mean = v.project ? sums[0] / static_cast<double>(v.m) : 0.0;
  double norms[2] = {0, 0};  // rᵀr, rᵀz
  for (std::int64_t j = threadIdx.x; j < v.m; j += kSchurCgThreads) {
    const double r = rhs[j] - mean;
    const double z = r / v.diagonal[j];
    v.residual[j] = r;
    v.direction[j] = z;
    v.solution[j] = 0;
    norms[0] += r * r;
    norms[1] += r * z;
  }
  cta_sums(norms);
  if (threadIdx.x == 0) {
    schur_cg_state& s = *v.state;
    s.initial_norm = sqrt(norms[0]);
    s.rz = norms[1];
    s.residual = s.initial_norm > 0 ? 1 : 0;
    s.iterations = 0;
    s.done = s.initial_norm > 0 ? 0 : 1;
    s.breakdown = 0;
  }
}

// q_j = c_j·p_j − μ_j·t_j, the step's product.
__device__ __forceinline__ double step_product(const schur_cg_vectors& v, std::int64_t j) {
  return v.column_sums[j] * v.direction[j] - v.column_masses[j] * v.product[j];
}

// The step's sums pᵀq, Σq, Σr into `first`; false (the breakdown marked, done set) when pᵀq ≤ 0.
// Call from all threads after the `done` test.
__device__ bool step_sums(const schur_cg_vectors& v, schur_cg_state& s, double (&first)[3]) {
  first[0] = first[1] = first[2] = 0;
  for (std::int64_t j = threadIdx.x; j < v.m; j += kSchurCgThreads) {
    const double q = step_product(v, j);
    first[0] += v.direction[j] * q;
    first[1] += q;
    first[2] += v.residual[j];
  }
  cta_sums(first);
  if (first[0] > 0) return true;
  if (threadIdx.x == 0) {
    s.breakdown = 1;
    s.done = 1;
  }
  return false;
}

__global__ void __launch_bounds__(kSchurCgThreads) schur_cg_step_kernel(schur_cg_vectors v) {
  schur_cg_state& s = *v.state;
  if (s.done) return;  // uniform: read by every thread before any thread writes it
  __syncthreads();
  double first[3];  // pᵀq, Σq, Σr
  if (!step_sums(v, s, first)) return;
  const double curvature = first[0];
  const double alpha = s.rz / curvature;
  const double mean = v.project ? (first[2] - alpha * first[1]) / static_cast<double>(v.m) : 0.0;  // of r − α·q

  double second[2] = {0, 0};  // rᵀr, rᵀz of the new residual
  for (std::int64_t j = threadIdx.x; j < v.m; j += kSchurCgThreads) {
    const double q = step_product(v, j);
    v.solution[j] += alpha * v.direction[j];
    const double r = v.residual[j] - alpha * q - mean;
    v.residual[j] = r;
    second[0] += r * r;
    second[1] += r * (r / v.diagonal[j]);
  }
  cta_sums(second);
  const double residual = sqrt(second[0]) / s.initial_norm;
  const bool converged = residual <= v.tolerance;
  const double beta = second[1] / s.rz;
  __syncthreads();  // every thread has read s.rz
  if (threadIdx.x == 0) {
    s.iterations += 1;
    s.residual = residual;
    s.done = converged ? 1 : 0;
    s.rz = second[1];
  }
  if (converged) return;
  for (std::int64_t j = threadIdx.x; j < v.m; j += kSchurCgThreads)
    v.direction[j] = v.residual[j] / v.diagonal[j] + beta * v.direction[j];
}

// The flexible step's first half: the step kernel up to the new residual (the last one kept).
__global__ void __launch_bounds__(kSchurCgThreads) schur_cg_advance_kernel(schur_cg_vectors v) {
  schur_cg_state& s = *v.state;
  if (s.done) return;
  __syncthreads();
  double first[3];  // pᵀq, Σq, Σr
  if (!step_sums(v, s, first)) return;
  const double alpha = s.rz / first[0];
  const double mean = v.project ? (first[2] - alpha * first[1]) / static_cast<double>(v.m) : 0.0;
  double norm[1] = {0};
  for (std::int64_t j = threadIdx.x; j < v.m; j += kSchurCgThreads) {
    const double q = step_product(v, j);
    v.solution[j] += alpha * v.direction[j];
    const double last = v.residual[j];
    const double r = last - alpha * q - mean;
    v.previous_residual[j] = last;
    v.residual[j] = r;
    norm[0] += r * r;
  }
  cta_sums(norm);
  if (threadIdx.x == 0) {
    const double residual = sqrt(norm[0]) / s.initial_norm;
    s.iterations += 1;
    s.residual = residual;
    s.done = residual <= v.tolerance ? 1 : 0;
  }
}

// The flexible step's second half (and, with `first`, the start's direction p = z).
__global__ void __launch_bounds__(kSchurCgThreads) schur_cg_direction_kernel(schur_cg_vectors v,
                                                                               const double* preconditioned,
                                                                               bool first) {
  schur_cg_state& s = *v.state;
  if (s.done) return;
  __syncthreads();
  double mean[1] = {0};
  if (v.project) {
    for (std::int64_t j = threadIdx.x; j < v.m; j += kSchurCgThreads) mean[0] += preconditioned[j];
    cta_sums(mean);
    mean[0] /= static_cast<double>(v.m);
  }
  double dots[2] = {0, 0};  // rᵀz, (r − r_last)ᵀz
  for (std::int64_t j = threadIdx.x; j < v.m; j += kSchurCgThreads) {
    const double z = preconditioned[j] - mean[0];
    dots[0] += v.residual[j] * z;
    if (!first) dots[1] += (v.residual[j] - v.previous_residual[j]) * z;
  }
  cta_sums(dots);
  if (!(dots[0] > 0)) {  // rᵀz ≤ 0: the preconditioner was not positive on r
    if (threadIdx.x == 0) {
      s.breakdown = 1;
      s.done = 1;
    }
    return;
  }
  const double beta = first ? 0.0 : dots[1] / s.rz;
  __syncthreads();  // every thread has read s.rz
  if (threadIdx.x == 0) s.rz = dots[0];
  for (std::int64_t j = threadIdx.x; j < v.m; j += kSchurCgThreads)
    v.direction[j] = (preconditioned[j] - mean[0]) + beta * v.direction[j];
}

// out_i = scale_i · in_i.
__global__ void hadamard_kernel(double* out, const double* scale, const double* in, std::int64_t count) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < count) out[i] = scale[i] * in[i];
}

}  // namespace flashsinkhorn::detail::kernels
