// The plan pass on tensor cores: FlashAttention's forward over the Sinkhorn score matrix.
// Per row i of the `rows` cloud (backend.hpp, plan_rows_request):
//   lse_i      = LSE_j S_ij
//   weighted_i = Σ_j softmax_j(S_i·)·V_j     (V: the staged values, plan_values_kernel.cuh)
//   cost_i     = Σ_j softmax_j(S_i·)·C_ij
// with S_ij = t_ij·ln 2 − s‖p_i‖²/ε and t_ij = (2s/ε)·log₂e·p_i·q_j + β_j (β: key_bias_kernel).
//
// One CTA = kBlockM rows (four warps × 16) and one tile of kValueCols value columns (grid.y tiles
// k; each recomputes the scores, only the first writes lse and cost). Per key tile of kBlockN
// keys the CTA consumes, through one cp.async ring of uniform stages,
//   the feature chunks of (queries, keys)  S_tile += Q_c·K_cᵀ          (mma.sync, as softmin_kernel.cuh)
//   then the value tile Vᵀ (kValueCols, kBlockN)  O += P·V              (mma.sync, P from registers)
// with the online softmax between the two: the running row maximum m (log₂ units, agreed by the
// quad), O, the row sum l and the cost sum rescaled by 2^(m_old − m_new), P = 2^(t − m_new) in the
// registers of S, rounded to the operand format first: l sums the same P the product sees, so the
// row finish's division by l normalises exactly (P·1 = 1 up to float accumulation, whatever the
// mode); the LSE takes the unrounded sum.
//
// A single value column (k = 1, kVector: the matrix-vector products of the HVP's CG) skips the
// tensor cores: each thread adds P·v for its own score elements with one FMA each, v read as fp32
// from a staged vector (keys_padded floats, zeros in the padding), and P is never rounded. With few
// row blocks the keys are split over grid.y (key_splits.hpp): each CTA then leaves its rows'
// partial state (row maximum, Σ P, Σ P·v) and plan_vector_combine_kernel merges the splits. The
// product is then as accurate as fp32 in every mode — the conjugate gradients on the Schur
// complement c∘v − Pᵀ(P·v)/a cancel most of each term, and tf32-rounded P or v (2⁻¹¹ relative)
// left them stalled (docs/cuda_backend.md, "The HVP on the GPU").
//
// The quadratic pass (kQuadratic, backend.hpp's plan_quadratic_rows: the HVP's "two-GEMM" term)
//   weighted_i = Σ_j softmax_j(S_i·)·(u_i·z_j)·V_j
// streams a third operand: the rows' directions u, stored like the rows' points (the mode's format
// and padding), one more query block per feature chunk of the ring. The warp computes U = u·Zᵀ
// beside S = Q·Kᵀ (the same MMA policy), and the A operand of O += ·V is P∘U instead of P; l sums
// the unrounded P. Z is the key chunk itself (z_j = q_j), or, with key_directions (the joint HVP's
// cross terms), a fourth operand stored like the keys, one more key block per chunk. Nothing of (P∘U) or of the d×d matrices Σ_j P_ij q_j q_jᵀ
// is ever stored: the memory is that of an ordinary plan pass plus the directions.
//
// P as the A operand of the second product, straight from the C layout of the first (PTX
// fragment layouts; g = lane/4, t = lane%4):
//   m16n8k8 (tf32): C holds keys 2t, 2t + 1 of each n8 group, A wants k-slots t, t + 4: the keys
//     are fed permuted (slot t ↔ key 2t, slot t + 4 ↔ key 2t + 1), and B reads the same keys,
//     which sit next to each other in Vᵀ: one 64-bit LDS per fragment.
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "cuda/softmin_kernel.cuh"

namespace flashsinkhorn::detail::kernels {

namespace plan_tile {
inline constexpr int kWarps = 4;
inline constexpr int kThreads = kWarps * 32;
inline constexpr int kBlockM = kWarps * 16;   // one m16 tile per warp
inline constexpr int kBlockN = 64;            // keys per tile (divides tile::kRowPadding)
inline constexpr int kValueCols = 64;         // value columns per CTA
inline constexpr int kChunkWords = 32;        // feature words per (queries, keys) stage
inline constexpr int kChunkStride = kChunkWords + 16;  // conflict-free 128-bit loads (softmin_kernel.cuh)
inline constexpr int kStages = 3;
// Vᵀ rows (one per value column) in shared memory, in words: 64 keys (+ 8: the 64-bit loads of a
// half-warp, rows 8 words apart mod 32, cover the 32 banks once).
inline constexpr int kValueStride = kBlockN + 8;
inline constexpr int kQueryChunkBytes = kBlockM * kChunkStride * 4;
inline constexpr int kKeyChunkBytes = kBlockN * kChunkStride * 4;
inline constexpr int kStageBytes = kQueryChunkBytes + kKeyChunkBytes;  // ≥ a Vᵀ tile (18 KiB)
inline constexpr int kSharedBytes = kStages * kStageBytes;
// The quadratic pass: each stage also holds the directions' chunk, after the keys', and with
// key directions their chunk last.
inline constexpr int kQuadraticStageBytes = kStageBytes + kQueryChunkBytes;
inline constexpr int kQuadraticSharedBytes = kStages * kQuadraticStageBytes;
inline constexpr int kKeyDirectionsStageBytes = kQuadraticStageBytes + kKeyChunkBytes;
inline constexpr int kKeyDirectionsSharedBytes = kStages * kKeyDirectionsStageBytes;
static_assert(kValueCols * kValueStride * 4 <= kStageBytes);
static_assert(kBlockN % 16 == 0 && kValueCols % 8 == 0);
}  // namespace plan_tile

// One split's state of a row of the one-column pass: the row maximum (log₂ units), Σ P and Σ P·v
// over the split's keys, both relative to that maximum.
struct plan_vector_partial {
  float max;
  float sum;
  float weighted;
};

// Bytes of the partial states of `splits` key splits over `padded_rows` rows (0 unsplit): the
// scratch the one-column passes need (this kernel's kVector and plan_vector_wgmma_kernel.cuh with
// plan_vector_partial; plan_vector_narrow_kernel.cuh with its float64 partials).
template <class Partial = plan_vector_partial>
inline std::int64_t plan_vector_partial_bytes_of(std::int64_t padded_rows, int splits) {
  return splits > 1 ? splits * padded_rows * static_cast<std::int64_t>(sizeof(Partial)) : 0;
}

struct plan_mma_params {
  const void* rows_points;          // (rows_padded, padded_dim) stored words
  const void* key_points;           // (keys_padded, padded_dim)
  const float* key_bias;            // (keys_padded,) β·log₂e, −∞ on padded keys
  const void* values_t;             // (value_tiles·kValueCols, keys_padded) staged Vᵀ, or nullptr;
                                    // kVector: (keys_padded,) fp32
  const void* directions;           // kQuadratic: (rows_padded, padded_dim) stored words, as rows_points
  const void* key_directions;       // kQuadratic: (keys_padded, padded_dim) as key_points, or nullptr
  const double* row_scaled_sq_norm;  // (rows,) s‖p_i‖²
  const double* key_scaled_sq_norm;  // (keys,) s‖q_j‖²
  double* lse;                      // (rows,)
  double* weighted;                 // (rows, k) or nullptr
  double* cost;                     // (rows,) or nullptr
  std::int64_t rows;
  std::int64_t keys;
  std::int64_t keys_padded;
  std::int64_t padded_words;        // 32-bit words per stored row
  std::int64_t k;
  float score_scale_log2;           // (2s/ε)·log₂e
  float cost_scale2;                // 2s
  double eps;
  // kVector with key splits: grid.y splits of tiles_per_split key tiles, partial states
  // (splits, rows_padded) written to `partials` instead of the outputs. nullptr: one split.
  plan_vector_partial* partials;
  std::int64_t rows_padded;
  int tiles_per_split;
};

// The operand policy of the P·V product: tf32 for the tf32 and bf16 modes (P in bf16 would move
// each weight by up to 2⁻⁸, measured 2.5e-3 relative in the gradient; the product is the cheap part
// at d ≤ 64), 3×TF32 for fp32. P is rounded to tf32 (fp32: kept, and split by the MMA policy);
// Vᵀ holds tf32-rounded floats (fp32: plain floats).
template <class Op>
struct plan_value_operands {
  using mma_policy = std::conditional_t<std::is_same_v<Op, fp32_split_operands>, fp32_split_operands, tf32_operands>;
  static constexpr int kKeysPerStep = 8;
  static constexpr int kValueStride = plan_tile::kValueStride;
  // Whether P is rounded before the product (tf32 policy): then the LSE needs its own unrounded sum;
  // in fp32 the two sums are the same and one is kept.
  static constexpr bool kRoundsP = std::is_same_v<mma_policy, tf32_operands>;
  __device__ __forceinline__ static float round(float p) {
    if constexpr (kRoundsP) return __uint_as_float(to_tf32(p));
    return p;
  }
  // A fragment of key step c from the scores' C fragment of n8 group c.
  __device__ __forceinline__ static typename mma_policy::a_fragment make_a(const float (&s)[plan_tile::kBlockN / 8][4],
                                                                           int c) {
    return mma_policy::make_a(__float_as_uint(s[c][0]), __float_as_uint(s[c][2]), __float_as_uint(s[c][1]),
                              __float_as_uint(s[c][3]));
  }
  // B fragment of key step c, value column group vf: Vᵀ[8vf + g][8c + 2t], [8c + 2t + 1].
  __device__ __forceinline__ static typename mma_policy::b_fragment make_b(const std::uint32_t* values_t, int c,
                                                                           int vf, int g, int t) {
    const uint2 w = *reinterpret_cast<const uint2*>(values_t + (8 * vf + g) * kValueStride + 8 * c + 2 * t);
    return mma_policy::make_b(w.x, w.y);
  }
};

// kCost: also the cost sum (two FMAs per score). kVector: one value column by FMA. kQuadratic: the
// quadratic pass, each term weighted by u_i·q_j (see above).
// The quadratic pass takes the 3×TF32 product in every mode: its sums cancel against the HVP's
// host terms (on a self-problem Σ_j P_ij (A_i·q_j) q_j ≈ (A_i·p_i) p_i), and P∘U rounded to tf32
// left the GPU's tf32 self-HVP 0.036 off float64 where the CPU backend's tf32 is 8e-4 off (H200,
// tests/gpu/hvp_gpu_test.cpp, 2026-11-30). V needs no split: it holds the keys' points or
// directions already rounded to the mode, which tf32 represents exactly.
template <class Op, bool kCost, bool kVector = false, bool kQuadratic = false>
__global__ void __launch_bounds__(plan_tile::kThreads) plan_mma_kernel(const plan_mma_params p) {
  using namespace plan_tile;
  using Values = plan_value_operands<std::conditional_t<kQuadratic, fp32_split_operands, Op>>;
  static_assert(!(kCost && kVector) && !(kQuadratic && (kCost || kVector)),
                "the vector and quadratic passes carry no cost, and are not both");
  // Whether P itself is rounded for the product (then l and the LSE keep separate sums); the
  // quadratic pass rounds P∘U instead, and l is the unrounded Σ P.
  constexpr bool kRoundsP = Values::kRoundsP && !kVector && !kQuadratic;
  const bool key_directions_given = kQuadratic && p.key_directions != nullptr;
  const int stage_bytes = !kQuadratic ? kStageBytes : key_directions_given ? kKeyDirectionsStageBytes
                                                                           : kQuadraticStageBytes;
  constexpr int kNFragments = kBlockN / 8;
  constexpr int kValueFragments = kValueCols / 8;

  extern __shared__ __align__(16) unsigned char shared[];
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const int g = lane / 4;
  const int t = lane % 4;

  const std::int64_t row_block0 = static_cast<std::int64_t>(blockIdx.x) * kBlockM;
  // grid.y: value tiles, or key splits of the vector pass.
  const bool split = kVector && p.partials != nullptr;
  const int value_tile = split ? 0 : static_cast<int>(blockIdx.y);
  const int all_tiles = static_cast<int>(p.keys_padded / kBlockN);
  const int tile_begin = split ? static_cast<int>(blockIdx.y) * p.tiles_per_split : 0;
  const int key_tiles = split ? max(0, min(all_tiles, tile_begin + p.tiles_per_split) - tile_begin) : all_tiles;
  const bool has_values = !kVector && p.values_t != nullptr;  // Vᵀ tiles through the ring
  const int chunks = static_cast<int>((p.padded_words + kChunkWords - 1) / kChunkWords);
  const int loads_per_tile = chunks + (has_values ? 1 : 0);
  const int loads = key_tiles * loads_per_tile;

  const auto* rows_points = static_cast<const std::uint32_t*>(p.rows_points);
  const auto* key_points = static_cast<const std::uint32_t*>(p.key_points);
  const auto* values_t = static_cast<const std::uint32_t*>(p.values_t);
  const auto* directions = static_cast<const std::uint32_t*>(p.directions);
  const auto* key_directions = static_cast<const std::uint32_t*>(p.key_directions);
  auto stage_ptr = [&](int load) { return shared + (load % kStages) * stage_bytes; };

  // Rows [row0, row0 + count) × words [c·kChunkWords, +width) into a tile of stride kChunkStride.
  auto load_chunk = [&](std::uint32_t* tile, const std::uint32_t* global, std::int64_t row0, int count, int chunk) {
    const std::int64_t col0 = static_cast<std::int64_t>(chunk) * kChunkWords;
    const int pieces = static_cast<int>(min64(kChunkWords, p.padded_words - col0)) / 4;
    for (int idx = threadIdx.x; idx < count * pieces; idx += kThreads) {
      const int r = idx / pieces;
      const int piece = idx % pieces;
      cp_async_16(tile + r * kChunkStride + piece * 4, global + (row0 + r) * p.padded_words + col0 + piece * 4);
    }
  };
  auto issue_load = [&](int load) {
    if (load < loads) {
      const int part = load % loads_per_tile;
      const std::int64_t key0 = static_cast<std::int64_t>(tile_begin + load / loads_per_tile) * kBlockN;
      auto* stage = reinterpret_cast<std::uint32_t*>(stage_ptr(load));
      if (part < chunks) {
        load_chunk(stage, rows_points, row_block0, kBlockM, part);
        load_chunk(stage + kQueryChunkBytes / 4, key_points, key0, kBlockN, part);
        if constexpr (kQuadratic) {
          load_chunk(stage + kStageBytes / 4, directions, row_block0, kBlockM, part);
          if (key_directions_given) load_chunk(stage + kQuadraticStageBytes / 4, key_directions, key0, kBlockN, part);
        }
      } else {  // Vᵀ rows of this CTA's value columns, keys [key0, key0 + kBlockN)
        constexpr int kPieces = kBlockN / 4;
        for (int idx = threadIdx.x; idx < kValueCols * kPieces; idx += kThreads) {
          const int r = idx / kPieces;
          const int piece = idx % kPieces;
          const std::int64_t column = static_cast<std::int64_t>(value_tile) * kValueCols + r;
          cp_async_16(stage + r * kValueStride + piece * 4, values_t + column * p.keys_padded + key0 + piece * 4);
        }
      }
    }
    cp_async_commit();
  };
  for (int load = 0; load < kStages - 1; ++load) issue_load(load);

  float s[1][kNFragments][4];                    // this warp's (16 rows, kBlockN keys): scores, then P
  [[maybe_unused]] float u[1][kNFragments][4];   // kQuadratic: the same tile of u·q
  float o[kValueFragments][4] = {};              // (16 rows, kValueCols) Σ P·V, C layout
  float row_max[2] = {-INFINITY, -INFINITY};     // rows g and g + 8, log₂ units, quad-agreed
  float row_sum[2] = {0.f, 0.f};                 // this thread's keys' share of l (rounded P)
  float lse_sum[2] = {0.f, 0.f};                 // the same of the unrounded P, for the LSE (kRoundsP)
  float cost_sum[2] = {0.f, 0.f};                // the same of Σ P·(s‖q‖² − 2s·p·q), unrounded P
  float vector_sum[2] = {0.f, 0.f};              // kVector: this thread's keys' share of Σ P·v

  for (int load = 0; load < loads; ++load) {
    cp_async_wait<kStages - 2>();
    __syncthreads();
    issue_load(load + kStages - 1);
    const int part = load % loads_per_tile;
    const auto* stage = reinterpret_cast<const std::uint32_t*>(stage_ptr(load));

    if (part >= chunks) {  // O += P·V over this key tile
#pragma unroll
      for (int c = 0; c < kBlockN / Values::kKeysPerStep; ++c) {
        const auto a = Values::make_a(s[0], c);
#pragma unroll
        for (int vf = 0; vf < kValueFragments; ++vf)
          Values::mma_policy::mma(o[vf], a, Values::make_b(stage, c, vf, g, t));
      }
      continue;
    }
    if (part == 0) {
#pragma unroll
      for (int nf = 0; nf < kNFragments; ++nf)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          s[0][nf][e] = 0.f;
          if constexpr (kQuadratic) u[0][nf][e] = 0.f;
        }
    }
    const int width = static_cast<int>(min64(kChunkWords, p.padded_words - static_cast<std::int64_t>(part) * kChunkWords));
    const std::uint32_t* key_rows = stage + kQueryChunkBytes / 4 + g * kChunkStride + 4 * t;
    accumulate_chunk_scores<Op, 1>(s, stage + (warp * 16 + g) * kChunkStride + 4 * t, key_rows, kChunkStride, width);
    if constexpr (kQuadratic) {
      const std::uint32_t* z_rows =
          key_directions_given ? stage + kQuadraticStageBytes / 4 + g * kChunkStride + 4 * t : key_rows;
      accumulate_chunk_scores<Op, 1>(u, stage + kStageBytes / 4 + (warp * 16 + g) * kChunkStride + 4 * t, z_rows,
                                     kChunkStride, width);
    }
    if (part != chunks - 1) continue;

    // The online softmax over this key tile: keys 8nf + 2t + e%2 of rows g (e < 2) and g + 8.
    const std::int64_t key0 = static_cast<std::int64_t>(tile_begin + load / loads_per_tile) * kBlockN;
    float bias[kNFragments][2], key_norm[kNFragments][2];
#pragma unroll
    for (int nf = 0; nf < kNFragments; ++nf)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const std::int64_t j = key0 + 8 * nf + 2 * t + e;
        bias[nf][e] = p.key_bias[j];
        if constexpr (kCost) key_norm[nf][e] = j < p.keys ? static_cast<float>(p.key_scaled_sq_norm[j]) : 0.f;
      }
    [[maybe_unused]] float2 vector[kNFragments];  // v of keys 8nf + 2t, 8nf + 2t + 1
    if constexpr (kVector) {
      const auto* v = static_cast<const float2*>(p.values_t) + key0 / 2 + t;
#pragma unroll
      for (int nf = 0; nf < kNFragments; ++nf) vector[nf] = v[4 * nf];
    }
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float tile_max = -INFINITY;
#pragma unroll
      for (int nf = 0; nf < kNFragments; ++nf)
#pragma unroll
        for (int e = 0; e < 2; ++e) tile_max = fmaxf(tile_max, fmaf(s[0][nf][2 * h + e], p.score_scale_log2, bias[nf][e]));
      const row_max_step step = advance_row_max(row_max[h], tile_max);
      const float reference = step.reference, rescale = step.rescale;
      row_sum[h] *= rescale;
      if constexpr (kRoundsP) lse_sum[h] *= rescale;
      cost_sum[h] *= rescale;
      if constexpr (kVector) vector_sum[h] *= rescale;
#pragma unroll
      for (int vf = 0; vf < kValueFragments; ++vf) {
        o[vf][2 * h] *= rescale;
        o[vf][2 * h + 1] *= rescale;
      }
#pragma unroll
      for (int nf = 0; nf < kNFragments; ++nf)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const float dot = s[0][nf][2 * h + e];
          const float exact = fast_exp2(fmaf(dot, p.score_scale_log2, bias[nf][e]) - reference);
          const float weight = kRoundsP ? Values::round(exact) : exact;
          if constexpr (kRoundsP) lse_sum[h] += exact;
          row_sum[h] += weight;
          if constexpr (kCost) cost_sum[h] = fmaf(exact, fmaf(-p.cost_scale2, dot, key_norm[nf][e]), cost_sum[h]);
          if constexpr (kVector) vector_sum[h] = fmaf(exact, e == 0 ? vector[nf].x : vector[nf].y, vector_sum[h]);
          if constexpr (kQuadratic) {
            s[0][nf][2 * h + e] = Values::round(exact * u[0][nf][2 * h + e]);
          } else {
            s[0][nf][2 * h + e] = weight;
          }
        }
    }
  }
  cp_async_wait<0>();

#pragma unroll
  for (int h = 0; h < 2; ++h) {
    float l = row_sum[h], c = cost_sum[h], exact = kRoundsP ? lse_sum[h] : row_sum[h], v = vector_sum[h];
    l += __shfl_xor_sync(0xffffffffu, l, 1);
    l += __shfl_xor_sync(0xffffffffu, l, 2);
    exact += __shfl_xor_sync(0xffffffffu, exact, 1);
    exact += __shfl_xor_sync(0xffffffffu, exact, 2);
    c += __shfl_xor_sync(0xffffffffu, c, 1);
    c += __shfl_xor_sync(0xffffffffu, c, 2);
    if constexpr (kVector) {
      v += __shfl_xor_sync(0xffffffffu, v, 1);
      v += __shfl_xor_sync(0xffffffffu, v, 2);
    }
    const std::int64_t row = row_block0 + warp * 16 + h * 8 + g;
    if (row >= p.rows) continue;
    if (split) {
      if (t == 0) p.partials[blockIdx.y * p.rows_padded + row] = {row_max[h], exact, v};
      continue;
    }
    const double norm = p.row_scaled_sq_norm[row];
    const double inverse = l > 0 ? 1.0 / static_cast<double>(l) : 0.0;
    if (value_tile == 0 && t == 0) {
      p.lse[row] = static_cast<double>(row_max[h]) * 0.69314718055994530942 + log(static_cast<double>(exact)) - norm / p.eps;
      if (kCost) p.cost[row] = norm + static_cast<double>(c) / static_cast<double>(exact);
    }
    if (p.weighted == nullptr) continue;
    if constexpr (kVector) {
      if (t == 0) p.weighted[row] = static_cast<double>(v) * inverse;
    } else {
#pragma unroll
      for (int vf = 0; vf < kValueFragments; ++vf)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const std::int64_t column = static_cast<std::int64_t>(value_tile) * kValueCols + 8 * vf + 2 * t + e;
          if (column < p.k) p.weighted[row * p.k + column] = static_cast<double>(o[vf][2 * h + e]) * inverse;
        }
    }
  }
}

// One row's key-split partial states (max m_s, sum l_s, weighted w_s; `splits` of them, rows_padded
// apart) merged at M = max_s m_s: l = Σ_s l_s·b^(m_s − M), w = Σ_s w_s·b^(m_s − M), with b^x =
// power(x) (2 for states in log2 units, e in natural ones).
struct merged_split_state {
  double max, sum, weighted;
};
template <class Partial, class Power>
__device__ __forceinline__ merged_split_state merge_split_partials(const Partial* row_partials, std::int64_t rows_padded,
                                                                   int splits, Power power) {
  merged_split_state out{-INFINITY, 0, 0};
  for (int s = 0; s < splits; ++s) out.max = fmax(out.max, static_cast<double>(row_partials[s * rows_padded].max));
  for (int s = 0; s < splits; ++s) {
    const Partial part = row_partials[s * rows_padded];
    if (part.max == -INFINITY) continue;  // a split without keys, or with only −∞ scores
    const double scale = power(static_cast<double>(part.max) - out.max);
    out.sum += scale * part.sum;
    out.weighted += scale * part.weighted;
  }
  return out;
}

// Merges the key splits of the one-column pass, one thread per row (merge_split_partials in log2
// units), then the same finish as one split's: lse = M·ln 2 + ln l − s‖p‖²/ε, weighted = w/l. A
// template so that both launchers' translation units (plan_rows_launch.cu,
// plan_vector_wgmma_launch.cu) may instantiate it without a duplicate symbol.
template <class Partial = plan_vector_partial>
__global__ void plan_vector_combine_kernel(const plan_mma_params p, int splits) {
  const std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (row >= p.rows) return;
  const merged_split_state merged =
      merge_split_partials(p.partials + row, p.rows_padded, splits, [](double x) { return exp2(x); });
  p.lse[row] = merged.max * 0.69314718055994530942 + log(merged.sum) - p.row_scaled_sq_norm[row] / p.eps;
  if (p.weighted != nullptr) p.weighted[row] = merged.sum > 0 ? merged.weighted / merged.sum : 0.0;
}

}  // namespace flashsinkhorn::detail::kernels
