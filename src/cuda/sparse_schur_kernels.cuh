// The device kernels of the sparse Schur complement (sparse_schur.hpp)
//   S_k = diag(d) − Wᵀ·W,   W_iu = √a_i·s_iu on the kept entries (i, j_iu), K per row,
// and of its solve by Jacobi-preconditioned CG in one cooperative kernel: the vectors are O(n + m)
// and the products O(n·K), so an iteration costs its three grid-wide barriers, not its arithmetic.
// Every reduction sums per-CTA partials in one fixed order: the solve is deterministic.
#pragma once

#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace flashsinkhorn::detail::kernels {

inline constexpr int kSparseSchurThreads = 256;

struct sparse_schur_view {
  std::int64_t n = 0, m = 0;
  int entries_per_row = 0;                   // K
  const int* entry_keys = nullptr;           // (n, K): j_iu, or −1
  const double* entry_weights = nullptr;     // (n, K): W_iu = √a_i·s_iu (0 where j_iu = −1)
  const int* column_offsets = nullptr;       // (m + 1): column j's entries are column_entries[offsets j, j + 1)
  const int* column_entries = nullptr;       // entry ids e = i·K + u, by column, ascending within one
  const double* diagonal = nullptr;          // d (m,)
  const double* inverse_diagonal = nullptr;  // 1 / diag(S_k) (m,), the inner Jacobi preconditioner
};

struct sparse_schur_work {
  double* row_values = nullptr;  // t = W·p (n,)
  double* residual = nullptr;    // (m,)
  double* scaled = nullptr;      // z = r / diag(S_k) (m,)
  double* directions = nullptr;  // two (m,) buffers: p of the last iteration and of this one
  double* product = nullptr;     // q = S_k·p (m,)
  double* partials = nullptr;    // (2, gridDim.x, 2): the CTAs' partial sums of two reductions
};

// Column j of Wᵀ·t.
__device__ __forceinline__ double transposed_row(const sparse_schur_view& s, const double* t, std::int64_t j) {
  double sum = 0;
  for (int e = s.column_offsets[j]; e < s.column_offsets[j + 1]; ++e) {
    const int entry = s.column_entries[e];
    sum = fma(s.entry_weights[entry], t[entry / s.entries_per_row], sum);
  }
  return sum;
}

// Σ over the CTAs of `partials` (gridDim.x, 2), the same order in every CTA; all threads get it.
__device__ __forceinline__ void grid_totals(const double* partials, double (&totals)[2]) {
  __shared__ double shared[2];
  if (threadIdx.x < 32) {
    double sums[2] = {0, 0};
    for (unsigned b = threadIdx.x; b < gridDim.x; b += 32) {
      sums[0] += partials[2 * b];
      sums[1] += partials[2 * b + 1];
    }
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2) {
      sums[0] += __shfl_xor_sync(0xffffffffu, sums[0], offset);
      sums[1] += __shfl_xor_sync(0xffffffffu, sums[1], offset);
    }
    if (threadIdx.x == 0) {
      shared[0] = sums[0];
      shared[1] = sums[1];
    }
  }
  __syncthreads();
  totals[0] = shared[0];
  totals[1] = shared[1];
  __syncthreads();  // shared is reused by the next call
}

// This CTA's sums of two per-thread values, written to partials[blockIdx.x].
__device__ __forceinline__ void cta_partials(double a, double b, double* partials) {
  __shared__ double warp_sums[kSparseSchurThreads / 32][2];
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) {
    a += __shfl_xor_sync(0xffffffffu, a, offset);
    b += __shfl_xor_sync(0xffffffffu, b, offset);
  }
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) {
    warp_sums[warp][0] = a;
    warp_sums[warp][1] = b;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    double sa = 0, sb = 0;
    for (int w = 0; w < kSparseSchurThreads / 32; ++w) {
      sa += warp_sums[w][0];
      sb += warp_sums[w][1];
    }
    partials[2 * blockIdx.x] = sa;
    partials[2 * blockIdx.x + 1] = sb;
  }
  __syncthreads();
}

// x ≈ S_k⁻¹·rhs by CG from x = 0 until ‖r‖ ≤ tolerance·‖rhs‖ or max_iterations; x is `solution`.
// Returns at once when *skip ≠ 0 (the outer CG's `done`, read before anything is written).
// Per iteration, with p = z + β·p_last computed where it is read (p_last is the other buffer):
//   t = W·p  |  q = d∘p − Wᵀt, Σ pᵀq  |  α, x += α·p, r −= α·q, z = r/diag, Σ rᵀr, rᵀz  | β
__global__ void __launch_bounds__(kSparseSchurThreads)
    sparse_schur_solve_kernel(const sparse_schur_view s, const sparse_schur_work w, const double* rhs, double* solution,
                              double tolerance, int max_iterations, const int* skip) {
  if (skip != nullptr && *skip != 0) return;
  cooperative_groups::grid_group grid = cooperative_groups::this_grid();
  const std::int64_t first = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  double* curvature_partials = w.partials;                 // pᵀq
  double* residual_partials = w.partials + 2 * gridDim.x;  // rᵀr, rᵀz

  double rr = 0, rz = 0;
  for (std::int64_t j = first; j < s.m; j += stride) {
    const double r = rhs[j];
    const double z = r * s.inverse_diagonal[j];
    w.residual[j] = r;
    w.scaled[j] = z;
    w.directions[j] = 0;
    solution[j] = 0;
    rr += r * r;
    rz += r * z;
  }
  cta_partials(rr, rz, residual_partials);
  grid.sync();
  double totals[2];
  grid_totals(residual_partials, totals);
  const double initial_norm = sqrt(totals[0]);
  if (!(initial_norm > 0)) return;
  rz = totals[1];
  double beta = 0;
  for (int it = 0; it < max_iterations; ++it) {
    const double* last = w.directions + (it % 2) * s.m;
    double* current = w.directions + ((it + 1) % 2) * s.m;
    auto direction = [&](std::int64_t j) { return w.scaled[j] + beta * last[j]; };
    for (std::int64_t i = first; i < s.n; i += stride) {
      double t = 0;
      for (int u = 0; u < s.entries_per_row; ++u) {
        const std::int64_t e = i * s.entries_per_row + u;
        const int j = s.entry_keys[e];
        if (j >= 0) t = fma(s.entry_weights[e], direction(j), t);
      }
      w.row_values[i] = t;
    }
    for (std::int64_t j = first; j < s.m; j += stride) current[j] = direction(j);
    grid.sync();
    double pq = 0;
    for (std::int64_t j = first; j < s.m; j += stride) {
      const double q = s.diagonal[j] * current[j] - transposed_row(s, w.row_values, j);
      w.product[j] = q;
      pq += current[j] * q;
    }
    cta_partials(pq, 0.0, curvature_partials);
    grid.sync();
    grid_totals(curvature_partials, totals);
    if (!(totals[0] > 0)) return;  // breakdown (roundoff at convergence): keep x
    const double alpha = rz / totals[0];
    rr = 0;
    double rz_next = 0;
    for (std::int64_t j = first; j < s.m; j += stride) {
      solution[j] += alpha * current[j];
      const double r = w.residual[j] - alpha * w.product[j];
      const double z = r * s.inverse_diagonal[j];
      w.residual[j] = r;
      w.scaled[j] = z;
      rr += r * r;
      rz_next += r * z;
    }
    cta_partials(rr, rz_next, residual_partials);
    grid.sync();
    grid_totals(residual_partials, totals);
    if (sqrt(totals[0]) <= tolerance * initial_norm) return;
    beta = totals[1] / rz;
    rz = totals[1];
  }
}

// S_k's parts from the top entries: W_iu = √a_i·s_iu and the sort keys (j, or m for a missing
// entry: sorted past every column).
__global__ void sparse_schur_weights_kernel(std::int64_t n, int entries_per_row, const int* entry_keys,
                                            const double* entry_values, const double* row_masses, std::int64_t m,
                                            double* entry_weights, int* sort_keys, int* entry_ids) {
  const std::int64_t e = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e >= n * entries_per_row) return;
  const int j = entry_keys[e];
  entry_weights[e] = j >= 0 ? sqrt(row_masses[e / entries_per_row]) * entry_values[e] : 0.0;
  sort_keys[e] = j >= 0 ? j : static_cast<int>(m);
  entry_ids[e] = static_cast<int>(e);
}

// offsets[j] = the first sorted position with key ≥ j, for j = 0..m (a binary search each).
__global__ void sparse_schur_offsets_kernel(const int* sorted_keys, std::int64_t entries, std::int64_t m,
                                            int* offsets) {
  const std::int64_t j = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j > m) return;
  std::int64_t lo = 0, hi = entries;
  while (lo < hi) {
    const std::int64_t mid = (lo + hi) / 2;
    if (sorted_keys[mid] < j)
      lo = mid + 1;
    else
      hi = mid;
  }
  offsets[j] = static_cast<int>(lo);
}

// d_j = max(column_sums_j, (1 + dominance)·(WᵀW·1)_j) + shift (core/sparse_plan_preconditioner.hpp,
// sparse_plan_diagonal: S_k diagonally dominant, so positive definite), and 1 / (d_j − Σ_e W_e²) over
// column j's entries. (W·1)_i is summed from row i's K weights for each of the column's entries.
__global__ void sparse_schur_diagonal_kernel(const sparse_schur_view s, const double* column_sums, double shift,
                                             double dominance, double* diagonal, double* inverse_diagonal) {
  const std::int64_t j = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= s.m) return;
  double squares = 0, coupling = 0;
  for (int e = s.column_offsets[j]; e < s.column_offsets[j + 1]; ++e) {
    const int entry = s.column_entries[e];
    const double weight = s.entry_weights[entry];
    const double* row = s.entry_weights + static_cast<std::int64_t>(entry / s.entries_per_row) * s.entries_per_row;
    double row_sum = 0;
    for (int u = 0; u < s.entries_per_row; ++u) row_sum += row[u];
    squares += weight * weight;
    coupling += weight * row_sum;
  }
  const double d = fmax(column_sums[j], (1 + dominance) * coupling) + shift;
  diagonal[j] = d;
  inverse_diagonal[j] = 1.0 / (d - squares);
}

}  // namespace flashsinkhorn::detail::kernels
