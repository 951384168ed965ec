// The SIMT plan pass: float64 arithmetic on the stored operands (Point: double in the fp64 mode,
// float in the fp32 mode with FMA dots, plan_pass_is_float64), tiled like a SIMT GEMM.
//
// One CTA owns kRows rows (and, for wide values, one chunk of the value columns: blockIdx.y) and
// walks the keys kKeys at a time. Its 256 threads form a 16 × 16 grid; thread (rg, kg) owns rows
// rg + 16r and keys kg + 16q of a tile (r, q < 4), so the half-warp sharing a row group reads the
// row operand by broadcast and consecutive keys from shared memory. Each tile's dot products
// come from operand slices of kDimChunk coordinates staged in shared memory, the next slice's
// loads in flight meanwhile (tile_dots): 16 FMAs per 8 shared loads, where a warp per row (this
// kernel's former form) read every key's coordinates from L2 for every row, twice — 9× slower at
// 10,000 × 64 on an H100 (bench/studies/hvp_trace.py).
// One sweep over the keys, FlashAttention's online softmax: a running maximum m_i per row, common
// to the row group (shuffles), the tile's weights exp(S_ij − m_i) into shared memory, then their
// product with the keys' values (thread: rows rg + 16r, columns kg + 16c of its chunk) and the
// row's Σ_j w_ij C_ij; what was summed before m_i moved is rescaled by exp(m_old − m_i), and the
// sums are divided by Σ_j exp(S_ij − m_i) at the end (lse_i = m_i + log of it). The keys' values
// come through shared memory too, a tile's copy (cp.async, two buffers) in flight during the
// previous tile's products and the tile's scores: read from L1/L2 at every key, with two warps a
// scheduler, they left the value loop waiting on its loads (docs/cuda_backend.md, session 53).
// With few row blocks the keys split over CTAs (blockIdx.z, key_splits.hpp), each leaving its rows'
// (m, Σ, cost) states and unnormalised P·V sums for plan_rows_combine_kernel: 10,000 rows are 157
// row blocks, one CTA an SM, two waves on 132 SMs with the second a fifth full.
// Float points are widened before they multiply: a product of two floats is exact in float64, and
// every dot product is one FMA chain over the coordinates in ascending order, so the x-rows and
// y-rows passes form the same C_ij to the bit (the Schur complement's two products then apply one
// matrix).
// With `directions` set it is the fused quadratic ("two-GEMM") pass of backend::plan_quadratic_rows:
// each term of the weighted sum is also multiplied by u_i·z_j, the second dot product of the row's
// direction with the key's z_j — the key's stored point, or the key's row of `key_directions`
// (weighted_i = Σ_j softmax_ij (u_i·z_j) V_j); lse and cost unchanged.
#pragma once

#include <cuda_pipeline.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "math/exp_by_exp2.hpp"

namespace flashsinkhorn::detail::kernels {

namespace plan_rows {
constexpr int kGroups = 16;                 // row groups × key groups = threads
constexpr int kThreads = kGroups * kGroups;
constexpr int kPerThread = 4;               // rows (and keys) of a tile per thread
constexpr int kRows = kGroups * kPerThread;  // rows per CTA
constexpr int kKeys = kGroups * kPerThread;  // keys per tile
constexpr int kDimChunk = 8;                // coordinates staged at a time
// Value columns per thread, by the launcher from k: a CTA's chunk is kGroups × that.
constexpr int kMaxColumnsPerThread = 8;
}  // namespace plan_rows

// A row's state over one key split (blockIdx.z): the running maximum m, and Σ exp(S − m) and
// Σ exp(S − m)·C over the split's keys; its value columns' Σ exp(S − m)·V_j lie beside
// (plan_rows_params::partial_weighted). plan_rows_combine_kernel merges the splits.
struct plan_rows_partial {
  double max;
  double total;
  double cost;
};

template <class Point>
struct plan_rows_params {
  const Point* rows_points;  // (rows, padded_dim)
  const Point* key_points;   // (keys, padded_dim)
  const double* row_scaled_sq_norm;
  const double* key_scaled_sq_norm;
  const double* key_log_weights;
  const double* key_potential;
  const double* values;          // (keys, k), rows values_stride apart
  const double* directions;      // (rows, dim) float64, the u_i of a quadratic pass, or nullptr
  const double* key_directions;  // (keys, dim) float64 z_j of a quadratic pass, or nullptr: the keys' points
  std::int64_t values_stride;
  double* lse;
  double* weighted;
  double* cost;
  std::int64_t rows;
  std::int64_t keys;
  std::int64_t dim;
  std::int64_t padded_dim;
  std::int64_t k;
  double cost_scale;
  double eps;
  // Key splits: CTA blockIdx.z takes key tiles [z·tiles_per_split, …) and, with more than one
  // split, leaves its rows' plan_rows_partial at partials[z·rows + i] and their value columns'
  // unnormalised sums at partial_weighted[(z·rows + i)·k + column] instead of the outputs.
  std::int64_t tiles_per_split;
  int splits;
  plan_rows_partial* partials;
  double* partial_weighted;
};

// A CTA's shared memory (dynamic): the operand slices of tile_dots (padded: the transposing stores
// and the reads stay conflict-free) and the tile's weights for the value product; the value tiles
// follow it (plan_rows_shared_bytes).
struct plan_rows_shared {
  double row_slice[plan_rows::kDimChunk][plan_rows::kRows + 1];
  double key_slice[plan_rows::kDimChunk][plan_rows::kKeys + 1];
  double weights[plan_rows::kRows][plan_rows::kKeys + 1];
};

// With value columns (kColumnsPerThread > 0), two tiles of the keys' values, kKeys × the CTA's chunk
// of columns each: a tile's copy (cp.async) runs during the previous tile's products and the
// tile's own scores.
constexpr int plan_rows_shared_bytes(int columns_per_thread) {
  return static_cast<int>(sizeof(plan_rows_shared)) +
         2 * plan_rows::kKeys * plan_rows::kGroups * columns_per_thread * static_cast<int>(sizeof(double));
}
static_assert(sizeof(plan_rows_shared) % 16 == 0, "the value tiles start 16-byte aligned");

// Starts the copy of the values of keys [key0, key0 + kKeys), columns [column0, column0 + kColumns),
// into `tile` (key-major, kColumns a key; zeros past the keys and past k), as one commit group.
// kColumns divides kThreads, so a thread keeps one column and steps kThreads / kColumns keys at a
// time: one 64-bit add an element (the form with e / kColumns and e % kColumns spent ~15 issue
// slots a copied double on index arithmetic, ~10% of a tile's at d = 64).
template <int kColumns, class Point>
__device__ __forceinline__ void copy_value_tile(double* tile, const plan_rows_params<Point>& p, std::int64_t key0,
                                                std::int64_t column0) {
  using namespace plan_rows;
  static_assert(kThreads % kColumns == 0, "a thread keeps its column");
  constexpr int kKeysPerStep = kThreads / kColumns;
  const int c = static_cast<int>(threadIdx.x) % kColumns;
  const bool column_inside = column0 + c < p.k;
  int t = static_cast<int>(threadIdx.x) / kColumns;
  std::int64_t offset = (key0 + t) * p.values_stride + column0 + c;  // of key key0 + t, column column0 + c
  const std::int64_t step = kKeysPerStep * p.values_stride;
#pragma unroll 4
  for (; t < kKeys; t += kKeysPerStep, offset += step) {
    const bool inside = column_inside && key0 + t < p.keys;
    __pipeline_memcpy_async(tile + t * kColumns + c, inside ? p.values + offset : p.values, sizeof(double),
                            inside ? 0 : sizeof(double));
  }
  __pipeline_commit();
}

// A thread's share of the slice of coordinates [c0, c0 + kDimChunk) of `count` (≤ kRows) operand
// rows, `stride` apart: element e is row idx / kDimChunk, coordinate idx % kDimChunk of
// idx = threadIdx.x + e·kThreads; zero past `count` and past `dim`. Loaded into registers one chunk
// ahead (tile_dots), stored transposed into slice[c][row].
constexpr int kSliceShare = plan_rows::kRows * plan_rows::kDimChunk / plan_rows::kThreads;
static_assert(kSliceShare * plan_rows::kThreads == plan_rows::kRows * plan_rows::kDimChunk);

template <class T>
__device__ __forceinline__ void load_slice(double (&share)[kSliceShare], const T* operand, std::int64_t stride,
                                           std::int64_t count, std::int64_t c0, std::int64_t dim) {
  using namespace plan_rows;
#pragma unroll
  for (int e = 0; e < kSliceShare; ++e) {
    const int idx = static_cast<int>(threadIdx.x) + e * kThreads;
    const int row = idx / kDimChunk, c = idx % kDimChunk;
    share[e] = row < count && c0 + c < dim ? static_cast<double>(operand[row * stride + c0 + c]) : 0.0;
  }
}

__device__ __forceinline__ void store_slice(double (&slice)[plan_rows::kDimChunk][plan_rows::kRows + 1],
                                            const double (&share)[kSliceShare]) {
  using namespace plan_rows;
#pragma unroll
  for (int e = 0; e < kSliceShare; ++e) {
    const int idx = static_cast<int>(threadIdx.x) + e * kThreads;
    slice[idx % kDimChunk][idx / kDimChunk] = share[e];
  }
}

// dots[r][q] = a_(rg+16r) · b_(kg+16q): one FMA chain per pair over the coordinates in ascending
// order (the same bits whichever side is `a`). a and b point at the tile's first operand rows.
// The next chunk's loads are in flight while a chunk is multiplied. Starts and ends with a
// barrier: the caller may reuse the slices and read `weights` around it.
template <class A, class B>
__device__ __forceinline__ void tile_dots(plan_rows_shared& shared, const A* a, std::int64_t a_stride,
                                          std::int64_t a_count, const B* b, std::int64_t b_stride,
                                          std::int64_t b_count, std::int64_t dim,
                                          double (&dots)[plan_rows::kPerThread][plan_rows::kPerThread]) {
  using namespace plan_rows;
  const int rg = static_cast<int>(threadIdx.x) / kGroups, kg = static_cast<int>(threadIdx.x) % kGroups;
#pragma unroll
  for (int r = 0; r < kPerThread; ++r)
#pragma unroll
    for (int q = 0; q < kPerThread; ++q) dots[r][q] = 0;
  double a_share[kSliceShare], b_share[kSliceShare];
  load_slice(a_share, a, a_stride, a_count, 0, dim);
  load_slice(b_share, b, b_stride, b_count, 0, dim);
  for (std::int64_t c0 = 0; c0 < dim; c0 += kDimChunk) {
    __syncthreads();
    store_slice(shared.row_slice, a_share);
    store_slice(shared.key_slice, b_share);
    __syncthreads();
    if (c0 + kDimChunk < dim) {
      load_slice(a_share, a, a_stride, a_count, c0 + kDimChunk, dim);
      load_slice(b_share, b, b_stride, b_count, c0 + kDimChunk, dim);
    }
    // Past `dim` the slices hold zeros: fma(0, 0, dot) = dot, the chain unchanged.
#pragma unroll
    for (int c = 0; c < kDimChunk; ++c) {
      double row_values[kPerThread], key_values[kPerThread];
#pragma unroll
      for (int r = 0; r < kPerThread; ++r) row_values[r] = shared.row_slice[c][rg + kGroups * r];
#pragma unroll
      for (int q = 0; q < kPerThread; ++q) key_values[q] = shared.key_slice[c][kg + kGroups * q];
#pragma unroll
      for (int r = 0; r < kPerThread; ++r)
#pragma unroll
        for (int q = 0; q < kPerThread; ++q) dots[r][q] = fma(row_values[r], key_values[q], dots[r][q]);
    }
  }
  __syncthreads();
}

__device__ __forceinline__ double row_group_max(double x) {
  for (int offset = plan_rows::kGroups / 2; offset > 0; offset /= 2) x = fmax(x, __shfl_xor_sync(0xffffffffu, x, offset));
  return x;
}

__device__ __forceinline__ double row_group_sum(double x) {
  for (int offset = plan_rows::kGroups / 2; offset > 0; offset /= 2) x += __shfl_xor_sync(0xffffffffu, x, offset);
  return x;
}

// A CTA's view of one key tile: C_ij and S_ij = (h_j − C_ij)/ε + log w_j of its threads' pairs.
template <class Point>
struct simt_plan_tile {
  const plan_rows_params<Point>& p;
  std::int64_t row0, key0, row_count, key_count;
  int rg, kg;
  double inv_eps;  // ×(1/ε) rather than /ε: a float64 division costs ~10× an FMA

  __device__ void costs(plan_rows_shared& shared, double (&c)[plan_rows::kPerThread][plan_rows::kPerThread]) const {
    using namespace plan_rows;
    tile_dots(shared, p.rows_points + row0 * p.padded_dim, p.padded_dim, row_count,
              p.key_points + key0 * p.padded_dim, p.padded_dim, key_count, p.dim, c);
#pragma unroll
    for (int r = 0; r < kPerThread; ++r) {
      const std::int64_t i = row0 + rg + kGroups * r;
      const double row_norm = i < p.rows ? p.row_scaled_sq_norm[i] : 0.0;
#pragma unroll
      for (int q = 0; q < kPerThread; ++q) {
        const std::int64_t j = key0 + kg + kGroups * q;
        const double key_norm = j < p.keys ? p.key_scaled_sq_norm[j] : 0.0;
        c[r][q] = row_norm + key_norm - 2.0 * p.cost_scale * c[r][q];
      }
    }
  }
  // −∞ past the keys.
  __device__ double score(int q, double c) const {
    const std::int64_t j = key0 + kg + plan_rows::kGroups * q;
    if (j >= p.keys) return -INFINITY;
    const double h = p.key_potential != nullptr ? p.key_potential[j] : 0.0;
    return fma(h - c, inv_eps, p.key_log_weights[j]);
  }
  // u_i·z_j of the quadratic pass.
  __device__ void direction_factors(plan_rows_shared& shared,
                                    double (&u)[plan_rows::kPerThread][plan_rows::kPerThread]) const {
    if (p.key_directions != nullptr)
      tile_dots(shared, p.directions + row0 * p.dim, p.dim, row_count, p.key_directions + key0 * p.dim, p.dim,
                key_count, p.dim, u);
    else
      tile_dots(shared, p.directions + row0 * p.dim, p.dim, row_count, p.key_points + key0 * p.padded_dim,
                p.padded_dim, key_count, p.dim, u);
  }
};

// kColumnsPerThread: each thread's value columns (kg + 16c of the CTA's chunk blockIdx.y), the
// weights going through shared memory; 0: the one-column and LSE-only passes (k ≤ 1, the CG's
// products), each thread summing w_ij·v_j over its own pairs in registers and the row group adding
// them up at the end (no shared weights, no value loop). kQuadratic: p.directions is set (the
// u_i·z_j tile beside the scores). The k ≤ 1 instance fits 128 registers without spills and runs
// two CTAs an SM; the others take up to 250 registers, one CTA. kByEx2: the weights' e^x by
// math::exp_by_exp2 (the fp32 mode's float points under FLASHSINKHORN_FP32_PASS_EXP=ex2).
template <class Point, int kColumnsPerThread, bool kQuadratic, bool kByEx2 = false>
__global__ void __launch_bounds__(plan_rows::kThreads, kColumnsPerThread == 0 ? 2 : 1)
    plan_rows_kernel(const plan_rows_params<Point> p) {
  static_assert(kColumnsPerThread > 0 || !kQuadratic, "the quadratic pass takes its weights through shared memory");
  constexpr bool kRegisterVector = kColumnsPerThread == 0;
  constexpr int kSumColumns = kRegisterVector ? 1 : kColumnsPerThread;
  using namespace plan_rows;
  constexpr int kChunk = kGroups * kSumColumns;  // the CTA's value columns
  extern __shared__ __align__(16) unsigned char plan_rows_memory[];
  plan_rows_shared& shared = *reinterpret_cast<plan_rows_shared*>(plan_rows_memory);
  double* const value_tiles = reinterpret_cast<double*>(plan_rows_memory + sizeof(plan_rows_shared));
  const int rg = static_cast<int>(threadIdx.x) / kGroups, kg = static_cast<int>(threadIdx.x) % kGroups;
  const std::int64_t row0 = static_cast<std::int64_t>(blockIdx.x) * kRows;
  const std::int64_t row_count = p.rows - row0 < kRows ? p.rows - row0 : kRows;
  const bool first_chunk = blockIdx.y == 0;  // writes lse and cost
  const std::int64_t keys_begin = static_cast<std::int64_t>(blockIdx.z) * p.tiles_per_split * kKeys;
  const std::int64_t keys_end = p.keys - keys_begin < p.tiles_per_split * kKeys ? p.keys : keys_begin + p.tiles_per_split * kKeys;

  const double inv_eps = 1.0 / p.eps;
  auto tile_at = [&](std::int64_t key0) {
    const std::int64_t key_count = p.keys - key0 < kKeys ? p.keys - key0 : kKeys;
    return simt_plan_tile<Point>{p, row0, key0, row_count, key_count, rg, kg, inv_eps};
  };

  // One sweep with a running maximum per row, common to the row group (FlashAttention's online
  // softmax): the tile's weights are exp(S_ij − m_i), and what was summed before m_i moved is
  // rescaled by exp(m_old − m_i).
  double running_max[kPerThread], total[kPerThread] = {}, cost_sum[kPerThread] = {};
  double sums[kPerThread][kSumColumns] = {};
#pragma unroll
  for (int r = 0; r < kPerThread; ++r) running_max[r] = -INFINITY;
  const std::int64_t column0 = static_cast<std::int64_t>(blockIdx.y) * kChunk;
  const bool stage_values = !kRegisterVector && p.weighted != nullptr;
  if (stage_values && keys_begin < keys_end) copy_value_tile<kChunk>(value_tiles, p, keys_begin, column0);
  int value_buffer = 0;  // the current tile's
  for (std::int64_t key0 = keys_begin; key0 < keys_end; key0 += kKeys) {
    const simt_plan_tile<Point> tile = tile_at(key0);
    double c[kPerThread][kPerThread];
    [[maybe_unused]] double u[kQuadratic ? kPerThread : 1][kPerThread];
    tile.costs(shared, c);
    if constexpr (kQuadratic) {
      if (p.weighted != nullptr) tile.direction_factors(shared, u);
    }
    [[maybe_unused]] double key_values[kPerThread] = {};  // v_j of the thread's keys (k ≤ 1 instance)
    if constexpr (kRegisterVector) {
      if (p.weighted != nullptr)
#pragma unroll
        for (int q = 0; q < kPerThread; ++q) {
          const std::int64_t j = key0 + kg + kGroups * q;
          if (j < p.keys) key_values[q] = p.values[j * p.values_stride];
        }
    }
#pragma unroll
    for (int r = 0; r < kPerThread; ++r) {
      double s[kPerThread], tile_max = -INFINITY;
#pragma unroll
      for (int q = 0; q < kPerThread; ++q) {
        s[q] = tile.score(q, c[r][q]);
        tile_max = fmax(tile_max, s[q]);
      }
      const double new_max = fmax(running_max[r], row_group_max(tile_max));
      double w[kPerThread] = {};
      if (new_max != -INFINITY) {  // uniform over the row group
        if (new_max != running_max[r]) {
          const double rescale = exp(running_max[r] - new_max);  // 0 from −∞
          total[r] *= rescale;
          cost_sum[r] *= rescale;
#pragma unroll
          for (int cc = 0; cc < kSumColumns; ++cc) sums[r][cc] *= rescale;
          running_max[r] = new_max;
        }
#pragma unroll
        for (int q = 0; q < kPerThread; ++q) {
          w[q] = s[q] == -INFINITY ? 0.0 : math::pass_exp<kByEx2>(s[q] - new_max);
          total[r] += w[q];
          cost_sum[r] = fma(w[q], c[r][q], cost_sum[r]);
          if constexpr (kRegisterVector) sums[r][0] = fma(w[q], key_values[q], sums[r][0]);
        }
      }
      if constexpr (!kRegisterVector) {
        if (p.weighted != nullptr)
#pragma unroll
          for (int q = 0; q < kPerThread; ++q)
            if constexpr (kQuadratic)
              shared.weights[rg + kGroups * r][kg + kGroups * q] = w[q] * u[r][q];
            else
              shared.weights[rg + kGroups * r][kg + kGroups * q] = w[q];
      }
    }
    if (!stage_values) continue;  // uniform over the CTA
    __pipeline_wait_prior(0);  // this thread's copies of the tile's values, then everyone's
    __syncthreads();
    // The next tile's values into the other buffer: its last readers, the previous tile's
    // products, are behind this tile's barriers.
    const double* const values_tile = value_tiles + value_buffer * kKeys * kChunk;
    value_buffer ^= 1;
    if (key0 + kKeys < keys_end) copy_value_tile<kChunk>(value_tiles + value_buffer * kKeys * kChunk, p, key0 + kKeys, column0);
    const int key_count = static_cast<int>(tile.key_count);
    for (int t = 0; t < key_count; ++t) {
      double value[kSumColumns];
#pragma unroll
      for (int cc = 0; cc < kSumColumns; ++cc) value[cc] = values_tile[t * kChunk + kg + kGroups * cc];
#pragma unroll
      for (int r = 0; r < kPerThread; ++r) {
        const double weight = shared.weights[rg + kGroups * r][t];
#pragma unroll
        for (int cc = 0; cc < kSumColumns; ++cc) sums[r][cc] = fma(weight, value[cc], sums[r][cc]);
      }
    }
    // (the next tile's tile_dots opens with a barrier before `weights` is written again)
  }

  // lse_i = m_i + log Σ_j exp(S_ij − m_i); the sums divided by Σ_j exp(S_ij − m_i) (a row without a
  // finite score: lse −∞, zero weights).
#pragma unroll
  for (int r = 0; r < kPerThread; ++r) {
    const std::int64_t i = row0 + rg + kGroups * r;
    const double row_total = row_group_sum(total[r]);
    const double row_cost = row_group_sum(cost_sum[r]);
    // Column 0's sum: lane kg = 0's own, or (k ≤ 1 instance) the row group's partial sums added up.
    const double first_column = kRegisterVector ? row_group_sum(sums[r][0]) : sums[r][0];
    if (i >= p.rows) continue;
    if (p.splits > 1) {
      const std::int64_t state = static_cast<std::int64_t>(blockIdx.z) * p.rows + i;
      if (kg == 0 && first_chunk) p.partials[state] = {running_max[r], row_total, row_cost};
      if (p.weighted == nullptr) continue;
      double* const partial_row = p.partial_weighted + state * p.k;
      if constexpr (kRegisterVector) {
        if (kg == 0) partial_row[0] = first_column;  // k = 1
      } else {
#pragma unroll
        for (int cc = 0; cc < kColumnsPerThread; ++cc) {
          const std::int64_t column = column0 + kg + kGroups * cc;
          if (column < p.k) partial_row[column] = sums[r][cc];
        }
      }
      continue;
    }
    const double inverse = row_total > 0 ? 1.0 / row_total : 0.0;
    if (kg == 0 && first_chunk) {
      p.lse[i] = running_max[r] + log(row_total);
      if (p.cost != nullptr) p.cost[i] = row_cost * inverse;
    }
    if (p.weighted == nullptr) continue;
    if constexpr (kRegisterVector) {
      if (kg == 0) p.weighted[i] = first_column * inverse;  // k = 1
    } else {
#pragma unroll
      for (int cc = 0; cc < kColumnsPerThread; ++cc) {
        const std::int64_t column = column0 + kg + kGroups * cc;
        if (column < p.k) p.weighted[i * p.k + column] = sums[r][cc] * inverse;
      }
    }
  }
}

// The plan's rows themselves, s_ij = exp(S_ij − lse_i), one 64 × 64 tile a CTA (blockIdx.x rows,
// blockIdx.y keys), into p.weighted (rows × keys, row-major), lse_i read from p.lse (an LSE-only
// pass over the same scores: the same FMA chains, so Σ_j s_ij = 1 to rounding); 0 in a row without
// a finite score. The dense Schur preconditioner's s (dense_schur.hpp) in n·m·d FMAs, where a pass
// with V = I took n·m·(d + m) and an m × m identity.
template <class Point>
__global__ void __launch_bounds__(plan_rows::kThreads) plan_softmax_kernel(const plan_rows_params<Point> p) {
  using namespace plan_rows;
  extern __shared__ __align__(16) unsigned char plan_rows_memory[];
  plan_rows_shared& shared = *reinterpret_cast<plan_rows_shared*>(plan_rows_memory);
  const int rg = static_cast<int>(threadIdx.x) / kGroups, kg = static_cast<int>(threadIdx.x) % kGroups;
  const std::int64_t row0 = static_cast<std::int64_t>(blockIdx.x) * kRows;
  const std::int64_t key0 = static_cast<std::int64_t>(blockIdx.y) * kKeys;
  const std::int64_t row_count = p.rows - row0 < kRows ? p.rows - row0 : kRows;
  const std::int64_t key_count = p.keys - key0 < kKeys ? p.keys - key0 : kKeys;
  const simt_plan_tile<Point> tile{p, row0, key0, row_count, key_count, rg, kg, 1.0 / p.eps};
  double c[kPerThread][kPerThread];
  tile.costs(shared, c);
#pragma unroll
  for (int r = 0; r < kPerThread; ++r) {
    const std::int64_t i = row0 + rg + kGroups * r;
    if (i >= p.rows) continue;
    const double lse = p.lse[i];
#pragma unroll
    for (int q = 0; q < kPerThread; ++q) {
      const std::int64_t j = key0 + kg + kGroups * q;
      if (j < p.keys) p.weighted[i * p.keys + j] = lse == -INFINITY ? 0.0 : exp(tile.score(q, c[r][q]) - lse);
    }
  }
}

// The splits merged, one thread per row and value column (one per row without values):
// m = max_z m_z, T = Σ_z total_z·exp(m_z − m), and the cost and the column's sum alike, divided by
// T; column 0's thread writes lse_i = m + log T and the cost.
template <class Point>
__global__ void plan_rows_combine_kernel(const plan_rows_params<Point> p) {
  const std::int64_t columns = p.weighted != nullptr ? p.k : 1;
  const std::int64_t e = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e >= p.rows * columns) return;
  const std::int64_t i = e / columns, column = e % columns;
  double max = -INFINITY;
  for (int z = 0; z < p.splits; ++z) max = fmax(max, p.partials[z * p.rows + i].max);
  double total = 0, cost = 0, weighted = 0;
  if (max != -INFINITY) {
    for (int z = 0; z < p.splits; ++z) {
      const std::int64_t state = z * p.rows + i;
      const plan_rows_partial& part = p.partials[state];
      const double scale = exp(part.max - max);  // 0 for a split without a finite score
      total += part.total * scale;
      cost += part.cost * scale;
      if (p.weighted != nullptr) weighted += p.partial_weighted[state * columns + column] * scale;
    }
  }
  const double inverse = total > 0 ? 1.0 / total : 0.0;
  if (column == 0) {
    p.lse[i] = max + log(total);
    if (p.cost != nullptr) p.cost[i] = cost * inverse;
  }
  if (p.weighted != nullptr) p.weighted[i * p.k + column] = weighted * inverse;
}

}  // namespace flashsinkhorn::detail::kernels
