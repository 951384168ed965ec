// Host side of the top-entries pass (plan_top_entries.hpp).
#include <cuda_bf16.h>

#include <algorithm>

#include "cuda/key_splits.hpp"
#include "cuda/plan_top_entries.hpp"
#include "cuda/plan_top_entries_kernel.cuh"

namespace flashsinkhorn::detail {
namespace {

// Rows up to this width stay in shared memory (top_resident_bytes ≤ 48 KiB: no opt-in needed).
constexpr std::int64_t kResidentDim = 64;

template <class S>
void enqueue_partials(const kernels::plan_top_entries_params& p, dim3 grid, cudaStream_t stream) {
  if (p.dim <= kResidentDim) {
    kernels::plan_top_entries_partial_kernel<S, kTopEntries, true>
        <<<grid, kernels::kTopRows, kernels::top_resident_bytes(p.dim), stream>>>(p);
  } else {
    kernels::plan_top_entries_partial_kernel<S, kTopEntries, false><<<grid, kernels::kTopRows, 0, stream>>>(p);
  }
}

// CTAs of the partial kernel resident per SM (registers bound it: ~3 at 166 per thread).
int ctas_per_sm(std::int64_t dim) {
  int count = 0;
  const cudaError_t status =
      dim <= kResidentDim
          ? cudaOccupancyMaxActiveBlocksPerMultiprocessor(
                &count, kernels::plan_top_entries_partial_kernel<float, kTopEntries, true>, kernels::kTopRows,
                kernels::top_resident_bytes(dim))
          : cudaOccupancyMaxActiveBlocksPerMultiprocessor(
                &count, kernels::plan_top_entries_partial_kernel<float, kTopEntries, false>, kernels::kTopRows, 0);
  return status == cudaSuccess ? std::max(count, 1) : 1;
}

}  // namespace

cudaError_t launch_plan_top_entries(precision mode, const plan_top_entries_args& args,
                                    device_buffer<unsigned char>& scratch, cudaStream_t stream) {
  const std::int64_t n = args.rows.count, m = args.keys.count;
  if (n == 0) return cudaSuccess;
  if (m == 0 || args.entry_keys == nullptr || args.entry_values == nullptr) return cudaErrorInvalidValue;
  // Key splits (key_splits.hpp) over the CTAs resident at once, each split at least four key tiles.
  const std::int64_t row_blocks = (n + kernels::kTopRows - 1) / kernels::kTopRows;
  const std::int64_t key_tiles = (m + kernels::kTopKeys - 1) / kernels::kTopKeys;
  const split_plan plan =
      plan_key_splits(row_blocks, key_tiles, std::int64_t{args.sm_count} * ctas_per_sm(args.rows.dim), 64, 4);
  const std::int64_t tiles_per_split = plan.tiles_per_split;
  const int splits = plan.splits;

  const auto states = static_cast<std::size_t>(splits) * static_cast<std::size_t>(n);
  const std::size_t bytes = states * (kTopEntries * (sizeof(float) + sizeof(int)) + 2 * sizeof(float));
  unsigned char* base = reserve(scratch, bytes, stream);
  kernels::plan_top_entries_params p;
  p.row_points = args.rows.points;
  p.key_points = args.keys.points;
  p.key_scaled_sq_norm = args.keys.scaled_sq_norm;
  p.key_log_weights = args.keys.log_weights;
  p.key_potential = args.key_potential;
  p.rows = n;
  p.keys = m;
  p.dim = args.rows.dim;
  p.padded_dim = args.rows.padded_dim;
  p.cost_scale = args.cost_scale;
  p.eps = args.eps;
  p.keys_per_split = static_cast<int>(tiles_per_split * kernels::kTopKeys);
  p.partial_scores = reinterpret_cast<float*>(base);
  p.partial_keys = reinterpret_cast<int*>(p.partial_scores + states * kTopEntries);
  p.partial_max = reinterpret_cast<float*>(p.partial_keys + states * kTopEntries);
  p.partial_sum = p.partial_max + states;

  const dim3 grid(static_cast<unsigned>(row_blocks), static_cast<unsigned>(splits));
  switch (mode) {
    case precision::fp64:
      enqueue_partials<double>(p, grid, stream);
      break;
    case precision::bf16:
      enqueue_partials<__nv_bfloat16>(p, grid, stream);
      break;
    default:
      enqueue_partials<float>(p, grid, stream);
      break;  // fp32, tf32: float storage
  }
  constexpr int kMergeThreads = 128;
  kernels::plan_top_entries_merge_kernel<kTopEntries>
      <<<static_cast<unsigned>((n + kMergeThreads - 1) / kMergeThreads), kMergeThreads, 0, stream>>>(
          p, splits, args.entry_keys, args.entry_values);
  return cudaGetLastError();
}

}  // namespace flashsinkhorn::detail
