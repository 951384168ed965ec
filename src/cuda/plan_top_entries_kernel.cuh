// The plan's largest entries per row, for the sparse Schur preconditioner
// (core/sparse_plan_preconditioner.hpp): for each row i the K largest of the row softmax
//   s_ij = softmax_j(t_ij),   t_ij = β_j + (2s/ε)·p_i·q_j,   β_j = (h_j − s‖q_j‖²)/ε + log w_j
// (the row's own −s‖p_i‖²/ε cancels in the softmax and is left out), with the row's LSE from the
// same scores so that the kept s_ij are consistent with each other.
//
// CUDA cores in fp32 (the entries only have to be good enough to precondition: the CG's operator
// stays the exact streamed one). A CTA of kTopRows threads holds kTopRows rows, one per thread, and
// streams its share of the keys (a key split, blockIdx.y) through shared memory kTopKeys at a time
// in dimension chunks of kTopChunk: each thread keeps kTopKeys dot products in registers, then
// folds the tile's scores into its running (max, Σ exp) and its sorted top-K. With kResident the
// CTA's rows sit in shared memory, transposed (conflict-free reads by row), for the whole split:
// read from global memory instead, each thread's own row is an uncoalesced load per key tile, which
// made the pass 5× slower at d = 64 (2 ms at 10,000 × 10,000 on the H200). A second kernel merges the
// splits' partial states per row and writes (j, s_ij), j = −1 for missing entries (rows with fewer
// than K keys, or scores of −∞).
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace flashsinkhorn::detail::kernels {

inline constexpr int kTopRows = 128;  // rows (threads) per CTA
inline constexpr int kTopKeys = 32;   // keys per shared-memory tile
inline constexpr int kTopChunk = 32;  // dimensions per shared-memory tile

// Shared bytes of the resident rows of width `dim` (whole chunks; a row stride of kTopRows + 1).
constexpr int top_resident_bytes(std::int64_t dim) {
  return static_cast<int>((dim + kTopChunk - 1) / kTopChunk * kTopChunk * (kTopRows + 1) * sizeof(float));
}

__device__ __forceinline__ float top_to_float(float x) { return x; }
__device__ __forceinline__ float top_to_float(double x) { return static_cast<float>(x); }
__device__ __forceinline__ float top_to_float(__nv_bfloat16 x) { return __bfloat162float(x); }

struct plan_top_entries_params {
  const void* row_points;            // (rows, padded_dim) in the mode's storage type
  const void* key_points;            // (keys, padded_dim): η⊙q
  const double* key_scaled_sq_norm;  // s‖q_j‖²
  const double* key_log_weights;     // log w_j
  const double* key_potential;       // h_j, or nullptr (0)
  std::int64_t rows = 0, keys = 0, dim = 0, padded_dim = 0;
  double cost_scale = 1, eps = 1;
  int keys_per_split = 0;  // a multiple of kTopKeys
  // Partial states, split-major: (splits, rows, K) scores and key indices, (splits, rows) max, sum.
  float* partial_scores = nullptr;
  int* partial_keys = nullptr;
  float* partial_max = nullptr;
  float* partial_sum = nullptr;
};

// Inserts (t, j) into the descending top-K list (t > top[K−1] checked by the caller), with
// constant indices only so that the list stays in registers.
template <int K>
__device__ __forceinline__ void top_insert(float (&top)[K], int (&index)[K], float t, int j) {
#pragma unroll
  for (int e = K - 1; e > 0; --e) {
    const bool shift = t > top[e - 1];  // t belongs above slot e − 1: slot e takes slot e − 1's entry
    const bool here = !shift && t > top[e];
    top[e] = shift ? top[e - 1] : (here ? t : top[e]);
    index[e] = shift ? index[e - 1] : (here ? j : index[e]);
  }
  if (t > top[0]) {
    top[0] = t;
    index[0] = j;
  }
}

// An empty top-K list: scores −∞, keys −1.
template <int K>
__device__ __forceinline__ void top_clear(float (&top)[K], int (&index)[K]) {
#pragma unroll
  for (int e = 0; e < K; ++e) {
    top[e] = -INFINITY;
    index[e] = -1;
  }
}

template <class S, int K, bool kResident>
__global__ void __launch_bounds__(kTopRows) plan_top_entries_partial_kernel(const plan_top_entries_params p) {
  extern __shared__ float resident[];  // kResident: [dim rounded to chunks][kTopRows + 1]
  // (written along c by consecutive threads, read as broadcasts along c: 16-byte vector loads)
  __shared__ __align__(16) float tile[kTopKeys][kTopChunk];
  __shared__ float bias[kTopKeys];
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * kTopRows + threadIdx.x;
  const bool live = i < p.rows;
  const S* row = static_cast<const S*>(p.row_points) + (live ? i : 0) * p.padded_dim;
  const S* keys = static_cast<const S*>(p.key_points);
  const float scale = static_cast<float>(2.0 * p.cost_scale / p.eps);
  const std::int64_t first = static_cast<std::int64_t>(blockIdx.y) * p.keys_per_split;
  const std::int64_t last = min(p.keys, first + p.keys_per_split);

  float top[K];
  int index[K];
  top_clear(top, index);
  float running_max = -INFINITY, running_sum = 0.f;
  const std::int64_t chunks = (p.dim + kTopChunk - 1) / kTopChunk;
  if constexpr (kResident) {
    const S* block_rows =
        static_cast<const S*>(p.row_points) + static_cast<std::int64_t>(blockIdx.x) * kTopRows * p.padded_dim;
    const std::int64_t width = chunks * kTopChunk;
    for (std::int64_t e = threadIdx.x; e < kTopRows * width; e += kTopRows) {
      const std::int64_t r = e / width, c = e % width;
      const bool inside = static_cast<std::int64_t>(blockIdx.x) * kTopRows + r < p.rows && c < p.dim;
      resident[c * (kTopRows + 1) + r] = inside ? top_to_float(block_rows[r * p.padded_dim + c]) : 0.f;
    }
  }

  for (std::int64_t j0 = first; j0 < last; j0 += kTopKeys) {
    float dot[kTopKeys];
#pragma unroll
    for (int u = 0; u < kTopKeys; ++u) dot[u] = 0.f;
    for (std::int64_t c0 = 0; c0 < chunks * kTopChunk; c0 += kTopChunk) {
      __syncthreads();  // the previous chunk's tile has been read (and, first, the resident rows written)
      for (int e = threadIdx.x; e < kTopKeys * kTopChunk; e += kTopRows) {
        const int u = e / kTopChunk, c = e % kTopChunk;
        const std::int64_t j = j0 + u, cc = c0 + c;
        tile[u][c] = j < last && cc < p.dim ? top_to_float(keys[j * p.padded_dim + cc]) : 0.f;
      }
      if (c0 == 0 && threadIdx.x < kTopKeys) {
        const std::int64_t j = j0 + threadIdx.x;
        const double h = j < last && p.key_potential != nullptr ? p.key_potential[j] : 0.0;
        bias[threadIdx.x] =
            j < last ? static_cast<float>((h - p.key_scaled_sq_norm[j]) / p.eps + p.key_log_weights[j]) : -INFINITY;
      }
      __syncthreads();
      float x[kTopChunk];
      if constexpr (kResident) {
#pragma unroll
        for (int c = 0; c < kTopChunk; ++c) x[c] = resident[(c0 + c) * (kTopRows + 1) + threadIdx.x];
      } else {
#pragma unroll
        for (int c = 0; c < kTopChunk; ++c) x[c] = c0 + c < p.dim ? top_to_float(row[c0 + c]) : 0.f;
      }
#pragma unroll
      for (int u = 0; u < kTopKeys; ++u)
#pragma unroll
        for (int c = 0; c < kTopChunk; ++c) dot[u] = fmaf(x[c], tile[u][c], dot[u]);
    }
#pragma unroll
    for (int u = 0; u < kTopKeys; ++u) {
      const float t = bias[u] + scale * dot[u];
      if (t == -INFINITY) continue;
      if (t > running_max) {
        running_sum = running_sum * __expf(running_max - t) + 1.f;
        running_max = t;
      } else {
        running_sum += __expf(t - running_max);
      }
      if (t > top[K - 1]) top_insert(top, index, t, static_cast<int>(j0 + u));
    }
  }
  if (!live) return;
  const std::int64_t slot = static_cast<std::int64_t>(blockIdx.y) * p.rows + i;
#pragma unroll
  for (int e = 0; e < K; ++e) {
    p.partial_scores[slot * K + e] = top[e];
    p.partial_keys[slot * K + e] = index[e];
  }
  p.partial_max[slot] = running_max;
  p.partial_sum[slot] = running_sum;
}

// One thread per row: the splits' LSE states and candidate lists merged; (j, s_ij) written.
template <int K>
__global__ void plan_top_entries_merge_kernel(const plan_top_entries_params p, int splits, int* entry_keys,
                                              double* entry_values) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= p.rows) return;
  float top[K];
  int index[K];
  top_clear(top, index);
  double max = -INFINITY;
  for (int s = 0; s < splits; ++s) max = fmax(max, static_cast<double>(p.partial_max[s * p.rows + i]));
  double sum = 0;
  for (int s = 0; s < splits; ++s) {
    const std::int64_t slot = s * p.rows + i;
    const double split_max = p.partial_max[slot];
    if (split_max != -INFINITY) sum += p.partial_sum[slot] * exp(split_max - max);
    for (int e = 0; e < K; ++e) {
      const float t = p.partial_scores[slot * K + e];
      if (t > top[K - 1]) top_insert(top, index, t, p.partial_keys[slot * K + e]);
    }
  }
  const double lse = max + log(sum);
#pragma unroll
  for (int e = 0; e < K; ++e) {
    const bool kept = index[e] >= 0 && sum > 0;
    entry_keys[i * K + e] = kept ? index[e] : -1;
    entry_values[i * K + e] = kept ? exp(static_cast<double>(top[e]) - lse) : 0.0;
  }
}

}  // namespace flashsinkhorn::detail::kernels
