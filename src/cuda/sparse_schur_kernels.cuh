// The device kernels of the sparse Schur complement (sparse_schur.hpp)
//   S_k = diag(d) − Wᵀ·W,   W_iu = √a_i·s_iu on the kept entries (i, j_iu), K per row,
// and of its solve by Jacobi-preconditioned CG in one cooperative kernel: the vectors are O(n + m)
// and the products O(n·K), so an iteration costs its grid-wide barriers and its chains of dependent
// loads, not its arithmetic. Hence the CG of Chronopoulos and Gear (two barriers an iteration, not
// three: its two inner products are summed together), K a compile-time constant (a row's K loads
// all in flight at once), and W stored twice, by rows and by columns with each entry's row and
// weight beside it (one load deep). Every reduction sums per-CTA partials in one fixed order: the
// solve is deterministic.
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
  const int* column_offsets = nullptr;       // (m + 1): column j's entries are [offsets j, j + 1) below
  const int* column_rows = nullptr;          // each entry's row i, by column (ascending i·K + u within one)
  const double* column_weights = nullptr;    // each entry's W_iu, in the same order
  const double* diagonal = nullptr;          // d (m,)
  const double* inverse_diagonal = nullptr;  // 1 / diag(S_k) (m,), the inner Jacobi preconditioner
};

// The CG's vectors (m,) unless said: residual r, preconditioned residual u = r / diag(S_k), w = S_k·u,
// the direction p and s = S_k·p (kept by recurrence).
struct sparse_schur_work {
  double* row_values = nullptr;  // t = W·u (n,)
  double* residual = nullptr;
  double* scaled = nullptr;      // u
  double* product = nullptr;     // w
  double* direction = nullptr;   // p
  double* direction_product = nullptr;  // s
  double* partials = nullptr;    // (gridDim.x, 3): the CTAs' partial sums of rᵀu, uᵀw, rᵀr
  int* iterations = nullptr;     // (1): the iterations the last solve ran (optional)
};

// Column j of Wᵀ·t.
__device__ __forceinline__ double transposed_row(const sparse_schur_view& s, const double* t, std::int64_t j) {
  double sum = 0;
  const int end = s.column_offsets[j + 1];
#pragma unroll 4
  for (int e = s.column_offsets[j]; e < end; ++e) sum = fma(s.column_weights[e], t[s.column_rows[e]], sum);
  return sum;
}

// This CTA's sums of three per-thread values, written to partials[blockIdx.x].
__device__ __forceinline__ void cta_partials(double a, double b, double c, double* partials) {
  __shared__ double warp_sums[kSparseSchurThreads / 32][3];
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) {
    a += __shfl_xor_sync(0xffffffffu, a, offset);
    b += __shfl_xor_sync(0xffffffffu, b, offset);
    c += __shfl_xor_sync(0xffffffffu, c, offset);
  }
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) {
    warp_sums[warp][0] = a;
    warp_sums[warp][1] = b;
    warp_sums[warp][2] = c;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    double sums[3] = {0, 0, 0};
    for (int w = 0; w < kSparseSchurThreads / 32; ++w)
      for (int v = 0; v < 3; ++v) sums[v] += warp_sums[w][v];
    for (int v = 0; v < 3; ++v) partials[3 * blockIdx.x + v] = sums[v];
  }
  __syncthreads();
}

// Σ over the CTAs of `partials` (gridDim.x, 3), the same order in every CTA; all threads get it.
__device__ __forceinline__ void grid_totals(const double* partials, double (&totals)[3]) {
  __shared__ double shared[3];
  if (threadIdx.x < 32) {
    double sums[3] = {0, 0, 0};
    for (unsigned b = threadIdx.x; b < gridDim.x; b += 32)
      for (int v = 0; v < 3; ++v) sums[v] += partials[3 * b + v];
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2)
      for (int v = 0; v < 3; ++v) sums[v] += __shfl_xor_sync(0xffffffffu, sums[v], offset);
    if (threadIdx.x == 0)
      for (int v = 0; v < 3; ++v) shared[v] = sums[v];
  }
  __syncthreads();
  for (int v = 0; v < 3; ++v) totals[v] = shared[v];
  __syncthreads();  // shared is reused by the next call
}

// x ≈ S_k⁻¹·rhs by preconditioned CG from x = 0 until ‖r‖ ≤ tolerance·‖rhs‖ or max_iterations;
// x is `solution`. Returns at once when *skip ≠ 0 (the outer CG's `done`, read before anything is
// written). Chronopoulos–Gear: with α, β of the last step, an iteration is
//   rows      t = W·u′, where u′ = (r − α·(w + β·s)) / diag(S_k) is the next u, formed where read
//   barrier
//   columns   p = u + β·p, s = w + β·s, x += α·p, r −= α·s, u = u′, w = d∘u − Wᵀt;
//             partial sums of γ = rᵀu, δ = uᵀw, rᵀr
//   barrier
//   scalars   stop on ‖r‖; β = γ/γ_last, α = γ / (δ − β·γ/α_last)   (the first: β = 0, α = γ/δ)
// Only the rows phase reads other columns' entries, and only the columns phase writes them, each
// column by its own thread: the two barriers are all the ordering needed. The first pass through
// the loop (α = 0, u = p = s = w = 0) only forms u₀ and w₀.
template <int K>
__global__ void __launch_bounds__(kSparseSchurThreads, 1)
    sparse_schur_solve_kernel(const sparse_schur_view s, const sparse_schur_work w, const double* rhs, double* solution,
                              double tolerance, int max_iterations, const int* skip) {
  if (skip != nullptr && *skip != 0) return;
  cooperative_groups::grid_group grid = cooperative_groups::this_grid();
  const std::int64_t first = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;

  double rr = 0;
  for (std::int64_t j = first; j < s.m; j += stride) {
    const double r = rhs[j];
    w.residual[j] = r;
    w.scaled[j] = 0;
    w.product[j] = 0;
    w.direction[j] = 0;
    w.direction_product[j] = 0;
    solution[j] = 0;
    rr += r * r;
  }
  cta_partials(rr, 0.0, 0.0, w.partials);
  grid.sync();
  double totals[3];
  grid_totals(w.partials, totals);
  const double initial_norm = sqrt(totals[0]);
  int iterations = 0;
  if (initial_norm > 0) {
    double alpha = 0, beta = 0, gamma_last = 0, alpha_last = 0;
    const auto next_scaled = [&](std::int64_t j) {
      return (w.residual[j] - alpha * (w.product[j] + beta * w.direction_product[j])) * s.inverse_diagonal[j];
    };
    for (;;) {
      for (std::int64_t i = first; i < s.n; i += stride) {
        double t = 0;
#pragma unroll
        for (int u = 0; u < K; ++u) {
          const int j = s.entry_keys[i * K + u];
          if (j >= 0) t = fma(s.entry_weights[i * K + u], next_scaled(j), t);
        }
        w.row_values[i] = t;
      }
      grid.sync();
      double gamma = 0, delta = 0;
      rr = 0;
      for (std::int64_t j = first; j < s.m; j += stride) {
        const double u = next_scaled(j);
        const double p = w.scaled[j] + beta * w.direction[j];
        const double sp = w.product[j] + beta * w.direction_product[j];
        const double r = w.residual[j] - alpha * sp;
        const double q = s.diagonal[j] * u - transposed_row(s, w.row_values, j);
        solution[j] += alpha * p;
        w.direction[j] = p;
        w.direction_product[j] = sp;
        w.residual[j] = r;
        w.scaled[j] = u;
        w.product[j] = q;
        gamma += r * u;
        delta += u * q;
        rr += r * r;
      }
      cta_partials(gamma, delta, rr, w.partials);
      grid.sync();
      grid_totals(w.partials, totals);
      if (sqrt(totals[2]) <= tolerance * initial_norm || iterations == max_iterations) break;
      gamma = totals[0];
      delta = totals[1];
      beta = iterations == 0 ? 0.0 : gamma / gamma_last;
      const double curvature = iterations == 0 ? delta : delta - beta * gamma / alpha_last;
      if (!(curvature > 0) || !(gamma > 0)) break;  // breakdown (roundoff at convergence): keep x
      alpha = gamma / curvature;
      gamma_last = gamma;
      alpha_last = alpha;
      ++iterations;
    }
  }
  if (w.iterations != nullptr && first == 0) *w.iterations = iterations;
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

// Each sorted entry's row and weight beside it: column_rows[e] = id / K, column_weights[e] = W[id].
__global__ void sparse_schur_columns_kernel(const int* sorted_ids, std::int64_t entries, int entries_per_row,
                                            const double* entry_weights, int* column_rows, double* column_weights) {
  const std::int64_t e = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e >= entries) return;
  const int id = sorted_ids[e];
  column_rows[e] = id / entries_per_row;
  column_weights[e] = entry_weights[id];
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
    const double weight = s.column_weights[e];
    const double* row = s.entry_weights + static_cast<std::int64_t>(s.column_rows[e]) * s.entries_per_row;
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
