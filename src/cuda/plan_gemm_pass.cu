// The fp64 plan pass by DGEMMs around a row kernel (plan_gemm_pass.hpp).
#include "cuda/plan_gemm_pass.hpp"

#include <cub/block/block_reduce.cuh>

#include <algorithm>
#include <cmath>
#include <string>

#include "cuda/blas_handles.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/kernel_variant.hpp"
#include "flashsinkhorn/error.hpp"
#include "math/lse_state.hpp"

namespace flashsinkhorn::detail {
namespace {

constexpr int kThreads = 256;
constexpr std::int64_t kScratchBytes = std::int64_t{256} << 20;

// Merges two rows' LSE states for cub's block reduction (math/lse_state.hpp's monoid).
struct merge_lse {
  __device__ math::lse_state<double> operator()(const math::lse_state<double>& a,
                                                const math::lse_state<double>& b) const {
    return math::combine(a, b);
  }
};

struct gemm_rows_params {
  double* block;                   // (B, keys): the dot products in, W out
  const double* row_scaled_sq_norm;  // the block's first row's
  const double* key_scaled_sq_norm;
  const double* key_log_weights;
  const double* key_potential;     // nullptr: h = 0
  double* lse;                     // the block's first row's
  double* cost;                    // the block's first row's, or nullptr
  std::int64_t keys;
  double cost_scale;
  double eps;
};

// One CTA a row of the block: C_ij into the row (first sweep, with the row's online LSE state),
// then W_ij = exp(S_ij − lse_i) over it and Σ_j W_ij C_ij (second sweep).
__global__ void __launch_bounds__(kThreads) plan_gemm_rows_kernel(const gemm_rows_params p) {
  using reduce = cub::BlockReduce<math::lse_state<double>, kThreads>;
  using sum = cub::BlockReduce<double, kThreads>;
  __shared__ union {
    typename reduce::TempStorage lse;
    typename sum::TempStorage cost;
  } scratch;
  __shared__ double row_lse;
  const std::int64_t row = blockIdx.x;
  double* const entries = p.block + row * p.keys;  // G_ij, then C_ij, then W_ij
  const double row_norm = p.row_scaled_sq_norm[row];
  const double inv_eps = 1.0 / p.eps;
  auto score = [&](std::int64_t j, double c) {
    const double h = p.key_potential != nullptr ? p.key_potential[j] : 0.0;
    return fma(h - c, inv_eps, p.key_log_weights[j]);
  };
  auto state = math::lse_state<double>::identity();
  for (std::int64_t j = threadIdx.x; j < p.keys; j += kThreads) {
    const double c = row_norm + p.key_scaled_sq_norm[j] - 2.0 * p.cost_scale * entries[j];
    entries[j] = c;
    const double s = score(j, c);
    if (s > state.max) {
      state.sum = state.sum * exp(state.max - s) + 1.0;
      state.max = s;
    } else if (s > -INFINITY) {
      state.sum += exp(s - state.max);
    }
  }
  const math::lse_state<double> whole = reduce(scratch.lse).Reduce(state, merge_lse{});
  if (threadIdx.x == 0) row_lse = whole.value();  // −∞ for a row without weight
  __syncthreads();
  const double lse = row_lse;
  double cost = 0.0;
  for (std::int64_t j = threadIdx.x; j < p.keys; j += kThreads) {
    const double c = entries[j];
    const double w = lse == -INFINITY ? 0.0 : exp(score(j, c) - lse);
    entries[j] = w;
    cost = fma(w, c, cost);
  }
  if (p.cost != nullptr) {
    __syncthreads();  // the union's storage changes hands
    const double row_cost = sum(scratch.cost).Sum(cost);
    if (threadIdx.x == 0) p.cost[row] = row_cost;
  }
  if (threadIdx.x == 0) p.lse[row] = lse;
}

// Rows [row0, row0 + rows) of the pass into `block` (rows × keys): the dot products (DGEMM), then
// the row kernel; W stays in `block`.
void block_weights(const plan_rows_launch_args& args, std::int64_t row0, std::int64_t rows, double* block,
                   cudaStream_t stream) {
  const auto* row_points = static_cast<const double*>(args.rows.points);
  const auto* key_points = static_cast<const double*>(args.keys.points);
  const auto keys = static_cast<int>(args.keys.count);
  const auto dim = static_cast<int>(args.rows.padded_dim);  // zeros in the padding
  const double one = 1.0, zero = 0.0;
  // Column-major, the row-major points are Pᵀ and Qᵀ (padded_dim × count) and the row-major block
  // (rows × keys) is Gᵀ (keys × rows): Gᵀ = Q·P_bᵀ.
  check_blas(cublasDgemm(thread_blas(stream), CUBLAS_OP_T, CUBLAS_OP_N, keys, static_cast<int>(rows), dim, &one,
                         key_points, dim, row_points + row0 * args.rows.padded_dim, dim, &zero, block, keys),
             "cublasDgemm (the plan pass's dot products)");
  gemm_rows_params p{};
  p.block = block;
  p.row_scaled_sq_norm = args.rows.scaled_sq_norm + row0;
  p.key_scaled_sq_norm = args.keys.scaled_sq_norm;
  p.key_log_weights = args.keys.log_weights;
  p.key_potential = args.key_potential;
  p.lse = args.lse + row0;
  p.cost = args.cost != nullptr ? args.cost + row0 : nullptr;
  p.keys = args.keys.count;
  p.cost_scale = args.cost_scale;
  p.eps = args.eps;
  plan_gemm_rows_kernel<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(p);
  FS_CUDA_CHECK(cudaGetLastError());
}

// The rows of a block of `keys` columns that `capacity` doubles hold, 0 where that is fewer than
// kPlanGemmMinBlockRows and the rows.
std::int64_t block_rows_within(std::int64_t rows, std::int64_t keys, std::int64_t capacity) {
  if (rows <= 0 || keys <= 0) return 0;
  const std::int64_t fit = std::min(rows, capacity / keys);
  return fit >= std::min(rows, kPlanGemmMinBlockRows) ? fit : 0;
}

// The rows of a block the pass's scratch holds (0: none).
std::int64_t scratch_block_rows(const plan_rows_launch_args& args) {
  if (args.gemm_scratch == nullptr) return 0;
  return block_rows_within(args.rows.count, args.keys.count, args.gemm_scratch_elements);
}

bool has_directions(const plan_rows_launch_args& args) {
  return args.directions != nullptr || args.key_directions != nullptr;
}

}  // namespace

bool plan_gemm_pass_enabled(precision mode, std::int64_t padded_dim) {
  if (mode != precision::fp64) return false;
  switch (float64_pass_choice()) {
    case float64_pass::automatic: return padded_dim >= kPlanGemmMinAutoDim;
    case float64_pass::gemm: return true;
    case float64_pass::simt: return false;
  }
  return false;
}

std::int64_t plan_gemm_scratch_elements(std::int64_t rows, std::int64_t keys) {
  return block_rows_within(rows, keys, kScratchBytes / static_cast<std::int64_t>(sizeof(double))) * keys;
}

bool plan_gemm_pass_applies(precision mode, const plan_rows_launch_args& args) {
  return plan_gemm_pass_enabled(mode, args.rows.padded_dim) && !has_directions(args) && scratch_block_rows(args) > 0;
}

void enqueue_plan_gemm_rows(const plan_rows_launch_args& args, cudaStream_t stream) {
  const std::int64_t n = args.rows.count, m = args.keys.count;
  if (n <= 0 || m <= 0) return;
  const std::int64_t block_rows = scratch_block_rows(args);
  if (block_rows == 0)
    throw invalid_argument("plan GEMM pass: its scratch holds fewer than " + std::to_string(kPlanGemmMinBlockRows) +
                           " rows of the keys");
  if (has_directions(args))
    throw invalid_argument("plan GEMM pass: the quadratic pass (directions) runs on the SIMT kernel");
  const bool weighted = args.weighted != nullptr && args.k > 0;
  const std::int64_t stride = args.values_stride > 0 ? args.values_stride : args.k;
  for (std::int64_t row0 = 0; row0 < n; row0 += block_rows) {
    const std::int64_t rows = std::min(block_rows, n - row0);
    block_weights(args, row0, rows, args.gemm_scratch, stream);
    if (!weighted) continue;
    // Column-major, weightedᵀ_b (k × rows) = Vᵀ (k × m, leading dimension `stride`) · Wᵀ (m × rows).
    const double one = 1.0, zero = 0.0;
    check_blas(cublasDgemm(thread_blas(stream), CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(args.k),
                           static_cast<int>(rows), static_cast<int>(m), &one, args.values, static_cast<int>(stride),
                           args.gemm_scratch, static_cast<int>(m), &zero, args.weighted + row0 * args.k,
                           static_cast<int>(args.k)),
               "cublasDgemm (the plan pass's weighted values)");
  }
}

void enqueue_plan_gemm_softmax(const plan_rows_launch_args& args, cudaStream_t stream) {
  if (args.weighted == nullptr || args.lse == nullptr) throw invalid_argument("plan GEMM softmax: no lse or s to write");
  if (args.rows.count <= 0 || args.keys.count <= 0) return;
  plan_rows_launch_args softmax = args;
  softmax.cost = nullptr;
  block_weights(softmax, 0, args.rows.count, args.weighted, stream);
}

}  // namespace flashsinkhorn::detail
