// The fused, row-stationary softmin kernels (SPEC §2). Device code only; launched from
// softmin_launch.cu. See softmin_launch.hpp for the three-launch structure of a half-step.
//
// Tensor-core kernel, one CTA = kBlockM rows of the `rows` cloud (kept in shared memory):
//   for each key tile (kBlockN keys) of this CTA's split, for each feature chunk (kChunkWords):
//     cp.async ring (kStages) brings the key chunk (and the query chunk when d is too large for
//     the query block to stay resident) while the previous stage is consumed;
//     acc(kBlockM, kBlockN) += Q_chunk · K_chunkᵀ   (mma.sync m16n8k8 tf32 | m16n8k16 bf16 | 3×tf32)
//   after the last chunk: t_ij = acc_ij·(2s/ε)·log2 e + β_j·log2 e, online (max, Σ 2^(t − max)) per
//   row in registers (4 rows per thread, quad shuffles for the max).
// Everything is in log2 units inside the loop (ex2.approx on the MUFU pipe); states are converted
// to natural units (max·ln 2) when they leave the kernel.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "cuda/tile_config.hpp"
#include "math/lse_state.hpp"

namespace flashsinkhorn::detail::kernels {

inline constexpr float kLn2f = 0.693147180559945309f;

struct softmin_params {
  const void* rows_points;         // (rows_padded, padded_dim)
  const void* key_points;          // (keys_padded, padded_dim)
  const void* key_bias;            // (keys_padded,) float (log2 units) or double (natural)
  const double* row_scaled_sq_norm;  // (rows,) s‖p_i‖²
  const double* row_weights;       // (rows,)
  const double* previous;          // (rows,) or nullptr
  double* out;                     // (rows,)
  double* error;                   // one double
  void* partial;                   // (splits, rows_padded) lse_state<float|double>
  unsigned* split_counts;          // (row blocks,) zeros between launches (finish_block)
  std::int64_t rows;
  std::int64_t rows_padded;
  std::int64_t padded_dim;         // row stride of the point arrays, elements
  std::int64_t dim;
  int key_tiles;                   // keys_padded / kBlockN
  int tiles_per_split;
  int splits;
  float score_scale_log2;          // (2s/ε)·log2 e
  double score_scale;              // 2s/ε (fp64 kernel)
  double eps;
  double damping;
  double blend;
  int accumulate_error;
  int max_shared_bytes;            // the device's opt-in shared memory per block
  float reference_margin_log2;     // predicted references: M below the predicted LSE (narrow_margin_choice)
  int query_pairs;                 // key pairs: the leftover row block's splits in query pairs (key_pair_layout)
};

// ---- small device helpers -----------------------------------------------------------------------

__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// One online-softmax step of a row whose keys are spread over the 4 lanes of a quad (the MMA C
// layout): the quad agrees on the tile maximum (two shuffles), the running maximum advances, and
// the step returns the reference the tile's 2^(t − reference) use (0 while the row has seen only
// −∞: no (−∞) − (−∞)) and the factor 2^(old max − reference) that rescales the running sums.
struct row_max_step {
  float reference;
  float rescale;
};

__device__ __forceinline__ row_max_step advance_row_max(float& row_max, float thread_tile_max) {
  float tile_max = fmaxf(thread_tile_max, __shfl_xor_sync(0xffffffffu, thread_tile_max, 1));
  tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 2));
  const float new_max = fmaxf(row_max, tile_max);
  const float reference = new_max == -INFINITY ? 0.f : new_max;
  const row_max_step step{reference, fast_exp2(row_max - reference)};
  row_max = new_max;
  return step;
}

__device__ __forceinline__ std::int64_t min64(std::int64_t a, std::int64_t b) { return a < b ? a : b; }

__device__ __forceinline__ std::uint32_t smem_address(const void* pointer) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(pointer));
}

__device__ __forceinline__ void cp_async_16(void* shared_dst, const void* global_src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_address(shared_dst)),
               "l"(global_src));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending));
}

// Sum of `value` over the block; the result is valid in thread 0. `scratch` holds one double per warp.
__device__ __forceinline__ double block_sum(double value, double* scratch) {
  for (int offset = 16; offset > 0; offset /= 2) value += __shfl_xor_sync(0xffffffffu, value, offset);
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (lane == 0) scratch[warp] = value;
  __syncthreads();
  double total = 0;
  if (threadIdx.x == 0) {
    const int warps = (blockDim.x + 31) / 32;
    for (int w = 0; w < warps; ++w) total += scratch[w];
  }
  return total;
}

// Predicted row references (softmin_narrow_kernel.cuh, softmin_wgmma_ws_kernel.cuh): row i's reference in
// log₂ units, the margin M (kernel_variant.hpp, narrow_margin_choice) under the LSE its previous
// potential implies: T_i = f_i/κ = s‖p_i‖² − ε·lse_i ⇒ lse_i = (s‖p_i‖² − f_i/κ)/ε (natural units; the
// scores leave out the row's −s‖p_i‖²/ε, as in finish_row). Real rows only (i < p.rows).
__device__ __forceinline__ double predicted_reference_log2(const softmin_params& p, std::int64_t i) {
  const double lse = (p.row_scaled_sq_norm[i] - p.previous[i] / p.damping) / p.eps;
  return lse * 1.44269504088896340736 - p.reference_margin_log2;
}

// The guard of a row's sum over a split against its predicted reference: usable in [2⁻⁶⁰, 3·10³⁸]. An
// overflow, a NaN, or a split holding too little of the row's mass fails, and the CTA folds its keys
// again with the online maximum.
__device__ __forceinline__ bool predicted_sum_usable(float sum) { return sum >= 0x1p-60f && sum <= 3.0e38f; }

// Finishes row i from its LSE (natural units): writes out_i, returns its error term.
__device__ __forceinline__ double finish_row(const softmin_params& p, std::int64_t i, double lse) {
  const double transformed = p.row_scaled_sq_norm[i] - p.eps * lse;  // T_i
  const double updated = p.damping * transformed;                    // new_i
  const double previous = p.previous != nullptr ? p.previous[i] : 0.0;
  p.out[i] = p.blend == 1.0 ? updated : (1.0 - p.blend) * previous + p.blend * updated;
  if (!p.accumulate_error) return 0;
  const double weight = p.row_weights[i];
  if (!(weight > 0)) return 0;
  return weight * fabs(exp((previous - updated) / p.eps) - 1.0);
}

// Row i leaves the kernel with its LSE state over this CTA's keys (natural units): finished when
// the key range is not split, else stored as split `split`'s partial state. Returns the error term.
__device__ __forceinline__ double leave_row(const softmin_params& p, std::int64_t i, int split,
                                            const math::lse_state<float>& state) {
  if (p.splits == 1) return finish_row(p, i, static_cast<double>(state.max) + log(static_cast<double>(state.sum)));
  static_cast<math::lse_state<float>*>(p.partial)[split * p.rows_padded + i] = state;
  return 0;
}

__device__ __forceinline__ void add_block_error(const softmin_params& p, double error,
                                                double* scratch) {
  if (!p.accumulate_error) return;  // uniform over the grid
  const double total = block_sum(error, scratch);
  if (threadIdx.x == 0 && total != 0) atomicAdd(p.error, total);
}

// A partial state written by another CTA of this launch, read from L2 (ld.global.cg: never a line
// this SM's L1 kept).
__device__ __forceinline__ math::lse_state<float> load_partial(const math::lse_state<float>* at) {
  const float2 v = __ldcg(reinterpret_cast<const float2*>(at));
  return {v.x, v.y};
}
__device__ __forceinline__ math::lse_state<double> load_partial(const math::lse_state<double>* at) {
  const double2 v = __ldcg(reinterpret_cast<const double2*>(at));
  return {v.x, v.y};
}

// The merge of finish_block: this thread's rows of the row block (threadIdx.x, + blockDim.x, ...)
// combined over the splits and finished; returns the thread's share of the error term. Not inlined:
// inlined, its loads in flight made ptxas spill in the warp-specialised kernels' main loops (116
// bytes); as a call, only the registers live across it are saved, once per CTA.
template <class State>
__device__ __noinline__ double merge_split_rows(const softmin_params& p, std::int64_t row_block0, int block_rows) {
  const auto* partial = static_cast<const math::lse_state<State>*>(p.partial);
  double mine = 0;
  for (int r = threadIdx.x; r < block_rows; r += blockDim.x) {
    const std::int64_t row = row_block0 + r;
    if (row >= p.rows) break;
    // kBatch loads in flight at a time (one L2 round trip per batch, not per split), then merged.
    constexpr int kBatch = 4;
    math::lse_state<State> state = math::lse_state<State>::identity();
    for (int s0 = 0; s0 < p.splits; s0 += kBatch) {
      math::lse_state<State> batch[kBatch];
#pragma unroll
      for (int k = 0; k < kBatch; ++k) {
        batch[k] = s0 + k < p.splits ? load_partial(partial + (s0 + k) * p.rows_padded + row)
                                     : math::lse_state<State>::identity();
      }
#pragma unroll
      for (int k = 0; k < kBatch; ++k) state = math::combine(state, batch[k]);
    }
    mine += finish_row(p, row, static_cast<double>(state.max) + log(static_cast<double>(state.sum)));
  }
  return mine;
}

// The end of every CTA of the softmin kernels; all its threads call it, `error` being the thread's
// share of the block's marginal-error term and `block_rows` the rows of a CTA.
// One split: the rows are finished already; the error is summed.
// Split key ranges: each CTA has stored its rows' partial states (leave_row). The last CTA of a row
// block to arrive — counted in p.split_counts[row_block0 / block_rows], the block's index whatever
// the grid's order (cta_work_of) — merges the splits of the block's rows
// (math::combine) and finishes them, so no combine kernel follows: a half-step is one launch of
// the softmin kernel after β. That CTA sets the count back to 0 for the next launch in stream
// order (no memset; a captured CUDA graph replays it as it is). `scratch` is the CTA's
// block_sum scratch (its first word carries the "last" flag first).
template <class State>
__device__ __forceinline__ void finish_block(const softmin_params& p, double error, double* scratch,
                                             std::int64_t row_block0, int block_rows) {
  if (p.splits == 1) {
    add_block_error(p, error, scratch);
    return;
  }
  auto* last = reinterpret_cast<int*>(scratch);
  __threadfence();  // release: this CTA's partial states are visible before its arrival is
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned* count = p.split_counts + row_block0 / block_rows;
    const unsigned arrived = atomicAdd(count, 1u) + 1u;
    *last = arrived == static_cast<unsigned>(p.splits) ? 1 : 0;
    if (*last) *count = 0u;
  }
  __syncthreads();
  const bool finishes = *last != 0;
  __syncthreads();  // the scratch is block_sum's next
  if (!finishes) return;
  __threadfence();  // acquire: the other splits' states are read after their arrivals
  const double mine = merge_split_rows<State>(p, row_block0, block_rows);
  add_block_error(p, mine, scratch);
}

// ---- tensor-core operand policies ---------------------------------------------------------------
// Shared tiles hold 32-bit words (one tf32/fp32 value or two bf16 values). A dot product may sum
// its k terms in any order as long as A and B use the same order, so the kernel feeds the MMA's
// logical k-slots from a permuted physical layout that makes every fragment load one 128-bit LDS:
// for a group of 16 words, lane (g = lane/4, t = lane%4) reads words [4t, 4t + 4) of its row and
//   k-step 0 takes words 4t (logical slot t) and 4t + 1 (slot t + 4),
//   k-step 1 takes words 4t + 2 (slot t)   and 4t + 3 (slot t + 4),
// for A (rows g and g + 8 of the m16 tile) and B (key g of the n8 fragment) alike. Each policy
// turns those words into fragments and runs the MMA (PTX m16n8k8 tf32 / m16n8k16 bf16 layouts).

__device__ __forceinline__ void mma_tf32(float (&acc)[4], const std::uint32_t (&a)[4],
                                         const std::uint32_t (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

__device__ __forceinline__ void mma_bf16(float (&acc)[4], const std::uint32_t (&a)[4],
                                         const std::uint32_t (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

__device__ __forceinline__ std::uint32_t to_tf32(float x) {
  std::uint32_t y;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(y) : "f"(x));
  return y;
}

// TF32 and BF16: operands were rounded (nearest even) on upload, so the words feed the MMA as is.
struct tf32_operands {
  using storage = float;
  struct a_fragment { std::uint32_t x[4]; };
  struct b_fragment { std::uint32_t x[2]; };
  __device__ __forceinline__ static a_fragment make_a(std::uint32_t a0, std::uint32_t a1, std::uint32_t a2,
                                                      std::uint32_t a3) {
    return {{a0, a1, a2, a3}};
  }
  __device__ __forceinline__ static b_fragment make_b(std::uint32_t b0, std::uint32_t b1) { return {{b0, b1}}; }
  __device__ __forceinline__ static void mma(float (&acc)[4], const a_fragment& a, const b_fragment& b) {
    mma_tf32(acc, a.x, b.x);
  }
};

struct bf16_operands {
  using storage = __nv_bfloat16;
  using a_fragment = tf32_operands::a_fragment;
  using b_fragment = tf32_operands::b_fragment;
  __device__ __forceinline__ static a_fragment make_a(std::uint32_t a0, std::uint32_t a1, std::uint32_t a2,
                                                      std::uint32_t a3) {
    return {{a0, a1, a2, a3}};
  }
  __device__ __forceinline__ static b_fragment make_b(std::uint32_t b0, std::uint32_t b1) { return {{b0, b1}}; }
  __device__ __forceinline__ static void mma(float (&acc)[4], const a_fragment& a, const b_fragment& b) {
    mma_bf16(acc, a.x, b.x);
  }
};

// FP32 as 3×TF32 (x = hi + lo, hi = rna_tf32(x), lo = rna_tf32(x − hi)):
//   a·b ≈ a_hi·b_hi + a_hi·b_lo + a_lo·b_hi; the dropped a_lo·b_lo is ≤ 2⁻²² relative, about
// float's own rounding. The small products go first so that they are not absorbed.
struct fp32_split_operands {
  using storage = float;
  struct a_fragment { std::uint32_t hi[4]; std::uint32_t lo[4]; };
  struct b_fragment { std::uint32_t hi[2]; std::uint32_t lo[2]; };
  __device__ __forceinline__ static void split(std::uint32_t word, std::uint32_t& hi, std::uint32_t& lo) {
    const float x = __uint_as_float(word);
    hi = to_tf32(x);
    lo = to_tf32(x - __uint_as_float(hi));
  }
  __device__ __forceinline__ static a_fragment make_a(std::uint32_t a0, std::uint32_t a1, std::uint32_t a2,
                                                      std::uint32_t a3) {
    a_fragment a;
    split(a0, a.hi[0], a.lo[0]);
    split(a1, a.hi[1], a.lo[1]);
    split(a2, a.hi[2], a.lo[2]);
    split(a3, a.hi[3], a.lo[3]);
    return a;
  }
  __device__ __forceinline__ static b_fragment make_b(std::uint32_t b0, std::uint32_t b1) {
    b_fragment b;
    split(b0, b.hi[0], b.lo[0]);
    split(b1, b.hi[1], b.lo[1]);
    return b;
  }
  __device__ __forceinline__ static void mma(float (&acc)[4], const a_fragment& a, const b_fragment& b) {
    mma_tf32(acc, a.lo, b.hi);
    mma_tf32(acc, a.hi, b.lo);
    mma_tf32(acc, a.hi, b.hi);
  }
};

// Shared-memory geometry of the tensor-core kernel (host and device), all in 32-bit words:
//   chunk_words   words of one feature chunk = min(kChunkWords, padded row words), a multiple of 16
//   row_words     shared row stride: chunk_words, + 16 when chunk_words % 32 == 0, so that the two
//                 rows read by one 8-lane phase of a 128-bit LDS fall in opposite bank halves
//   resident      the whole query block (chunks × kBlockM rows) stays in shared memory
// Stage layout: key chunk (kBlockN, row_words) · bias (kBlockN,) · [query chunk (kBlockM, row_words)].
struct mma_geometry {
  int chunk_words = 0;
  int row_words = 0;
  int chunks = 0;
  bool resident = true;
  int query_chunk_bytes = 0;
  int key_chunk_bytes = 0;
  int stage_bytes = 0;
  int resident_bytes = 0;
  int total_bytes = 0;
};

__host__ __device__ inline mma_geometry make_mma_geometry(std::int64_t padded_row_words, int chunk_limit,
                                                          bool allow_resident) {
  mma_geometry g;
  g.chunk_words = static_cast<int>(padded_row_words < chunk_limit ? padded_row_words : chunk_limit);
  g.row_words = g.chunk_words + (g.chunk_words % 32 == 0 ? 16 : 0);
  g.chunks = static_cast<int>((padded_row_words + g.chunk_words - 1) / g.chunk_words);
  g.query_chunk_bytes = tile::kBlockM * g.row_words * 4;
  g.key_chunk_bytes = tile::kBlockN * g.row_words * 4;
  g.resident = allow_resident &&
               static_cast<std::int64_t>(g.chunks) * g.query_chunk_bytes <= tile::kResidentQueryBytes;
  g.stage_bytes = g.key_chunk_bytes + tile::kBlockN * 4 + (g.resident ? 0 : g.query_chunk_bytes);
  g.resident_bytes = g.resident ? g.chunks * g.query_chunk_bytes : 0;
  g.total_bytes = g.resident_bytes + tile::kStages * g.stage_bytes;
  return g;
}

// The geometry used for a row width and the device's opt-in shared memory per block:
// resident query block with kChunkWords-word chunks when it fits (H200: d ≤ 256 tf32, d ≤ 512
// bf16); else the query streams next to the keys in half-width chunks (2 CTAs per SM on the
// H200), narrowed until the ring fits (16-word chunks need ≈ 37 KiB: every sm_80+ part).
__host__ __device__ inline mma_geometry choose_mma_geometry(std::int64_t padded_row_words, int max_shared_bytes) {
  mma_geometry g = make_mma_geometry(padded_row_words, tile::kChunkWords, true);
  if (g.resident && g.total_bytes <= max_shared_bytes) return g;
  for (int chunk = tile::kChunkWords / 2; chunk >= tile::kRowWordMultiple; chunk /= 2) {
    g = make_mma_geometry(padded_row_words, chunk, false);
    if (g.total_bytes <= max_shared_bytes) return g;
  }
  return g;
}

__device__ __forceinline__ uint4 load_shared_128(const std::uint32_t* address) {
  return *reinterpret_cast<const uint4*>(address);
}

// acc(16·kMTiles rows, 8·kNFragments keys) += Q·Kᵀ over `width` words (a multiple of 16) of one
// feature chunk in shared memory, MMA C layout. query_rows points at word 4t of this warp's row g,
// key_rows at word 4t of key g (the permuted k-slot layout above); rows are row_words apart.
template <class Op, int kUnroll, int kMTiles, int kNFragments>
__device__ __forceinline__ void accumulate_chunk_scores(float (&acc)[kMTiles][kNFragments][4],
                                                        const std::uint32_t* query_rows,
                                                        const std::uint32_t* key_rows, int row_words, int width) {
#pragma unroll kUnroll
  for (int w0 = 0; w0 < width; w0 += 16) {  // 16 words = two MMA k-steps
    uint4 a_lo[kMTiles], a_hi[kMTiles];  // rows g and g + 8 of each m16 tile
#pragma unroll
    for (int mt = 0; mt < kMTiles; ++mt) {
      a_lo[mt] = load_shared_128(query_rows + (mt * 16) * row_words + w0);
      a_hi[mt] = load_shared_128(query_rows + (mt * 16 + 8) * row_words + w0);
    }
    typename Op::a_fragment a0[kMTiles], a1[kMTiles];  // k-steps 0 and 1
#pragma unroll
    for (int mt = 0; mt < kMTiles; ++mt) {
      a0[mt] = Op::make_a(a_lo[mt].x, a_hi[mt].x, a_lo[mt].y, a_hi[mt].y);
      a1[mt] = Op::make_a(a_lo[mt].z, a_hi[mt].z, a_lo[mt].w, a_hi[mt].w);
    }
#pragma unroll
    for (int nf = 0; nf < kNFragments; ++nf) {
      const uint4 bw = load_shared_128(key_rows + nf * 8 * row_words + w0);
      const typename Op::b_fragment b0 = Op::make_b(bw.x, bw.y);
      const typename Op::b_fragment b1 = Op::make_b(bw.z, bw.w);
#pragma unroll
      for (int mt = 0; mt < kMTiles; ++mt) {
        Op::mma(acc[mt][nf], a0[mt], b0);
        Op::mma(acc[mt][nf], a1[mt], b1);
      }
    }
  }
}

// Copies rows [row0, row0 + count) × words [chunk·chunk_words, +width) of a (·, padded_words) word
// array into a shared tile of stride row_words, as 16-byte cp.async pieces spread over the block.
__device__ __forceinline__ void load_chunk_async(std::uint32_t* shared_tile, const std::uint32_t* global,
                                                 std::int64_t row0, int count, std::int64_t padded_words,
                                                 const mma_geometry& geo, int chunk) {
  const std::int64_t col0 = static_cast<std::int64_t>(chunk) * geo.chunk_words;
  const int width = static_cast<int>(min64(geo.chunk_words, padded_words - col0));
  const int pieces = width / 4;
  for (int idx = threadIdx.x; idx < count * pieces; idx += blockDim.x) {
    const int r = idx / pieces;
    const int piece = idx % pieces;
    cp_async_16(shared_tile + r * geo.row_words + piece * 4, global + (row0 + r) * padded_words + col0 + piece * 4);
  }
}

template <class Op>
__global__ void __launch_bounds__(tile::kThreads)
    softmin_mma_kernel(const softmin_params p) {
  constexpr int kNFragments = tile::kBlockN / 8;    // n8 fragments per key tile
  constexpr int kMTiles = tile::kRowsPerWarp / 16;  // m16 tiles per warp

  extern __shared__ __align__(16) unsigned char shared[];
  __shared__ double error_scratch[tile::kWarps];

  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const int g = lane / 4;  // fragment row group
  const int t = lane % 4;  // thread in group

  const std::int64_t padded_words = p.padded_dim * static_cast<std::int64_t>(sizeof(typename Op::storage)) / 4;
  const mma_geometry geo = choose_mma_geometry(padded_words, p.max_shared_bytes);
  const std::int64_t row_block0 = static_cast<std::int64_t>(blockIdx.x) * tile::kBlockM;
  const int split = blockIdx.y;
  const int tile_begin = split * p.tiles_per_split;
  const int tile_end = min(p.key_tiles, tile_begin + p.tiles_per_split);
  const int chunks = geo.chunks;
  const int loads = max(0, tile_end - tile_begin) * chunks;  // (tile, chunk) pairs

  const auto* rows_points = static_cast<const std::uint32_t*>(p.rows_points);
  const auto* key_points = static_cast<const std::uint32_t*>(p.key_points);
  const float* key_bias = static_cast<const float*>(p.key_bias);

  std::uint32_t* query_region = reinterpret_cast<std::uint32_t*>(shared);  // (chunks, kBlockM, row_words)
  unsigned char* ring = shared + geo.resident_bytes;
  auto stage_ptr = [&](int stage) { return ring + stage * geo.stage_bytes; };

  auto issue_load = [&](int load) {
    if (load < loads) {
      const int key_tile = tile_begin + load / chunks;
      const int chunk = load % chunks;
      unsigned char* stage = stage_ptr(load % tile::kStages);
      const std::int64_t key0 = static_cast<std::int64_t>(key_tile) * tile::kBlockN;
      load_chunk_async(reinterpret_cast<std::uint32_t*>(stage), key_points, key0, tile::kBlockN, padded_words, geo,
                       chunk);
      if (threadIdx.x < tile::kBlockN / 4)
        cp_async_16(stage + geo.key_chunk_bytes + threadIdx.x * 16, key_bias + key0 + threadIdx.x * 4);
      if (!geo.resident)
        load_chunk_async(reinterpret_cast<std::uint32_t*>(stage + geo.key_chunk_bytes + tile::kBlockN * 4),
                         rows_points, row_block0, tile::kBlockM, padded_words, geo, chunk);
    }
    cp_async_commit();
  };

  if (geo.resident) {
    for (int chunk = 0; chunk < chunks; ++chunk)
      load_chunk_async(query_region + chunk * (geo.query_chunk_bytes / 4), rows_points, row_block0, tile::kBlockM,
                       padded_words, geo, chunk);
  }
  for (int load = 0; load < tile::kStages - 1; ++load) issue_load(load);

  float acc[kMTiles][kNFragments][4];  // (kRowsPerWarp, kBlockN) scores of this warp, MMA C layout
  // Per-thread LSE states of its 4 rows (m-tile, half): rows g and g + 8 of each m16 tile.
  float row_max[kMTiles][2];
  float row_sum[kMTiles][2];
#pragma unroll
  for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      row_max[mt][h] = -INFINITY;
      row_sum[mt][h] = 0.f;
    }

  for (int load = 0; load < loads; ++load) {
    cp_async_wait<tile::kStages - 2>();
    __syncthreads();
    issue_load(load + tile::kStages - 1);

    const int chunk = load % chunks;
    const unsigned char* stage = stage_ptr(load % tile::kStages);
    const std::uint32_t* key_tile = reinterpret_cast<const std::uint32_t*>(stage);
    const std::uint32_t* query_tile =
        geo.resident ? query_region + chunk * (geo.query_chunk_bytes / 4)
                     : reinterpret_cast<const std::uint32_t*>(stage + geo.key_chunk_bytes + tile::kBlockN * 4);
    if (chunk == 0) {
#pragma unroll
      for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
        for (int nf = 0; nf < kNFragments; ++nf)
#pragma unroll
          for (int e = 0; e < 4; ++e) acc[mt][nf][e] = 0.f;
    }
    const int width = static_cast<int>(
        min64(geo.chunk_words, padded_words - static_cast<std::int64_t>(chunk) * geo.chunk_words));
    const std::uint32_t* query_rows = query_tile + (warp * tile::kRowsPerWarp + g) * geo.row_words + 4 * t;
    const std::uint32_t* key_rows = key_tile + g * geo.row_words + 4 * t;
    accumulate_chunk_scores<Op, tile::kKUnroll>(acc, query_rows, key_rows, geo.row_words, width);

    if (chunk == chunks - 1) {
      // Online LSE over this key tile: t_ij = acc·(2s/ε)log2e + β_j log2e.
      const float* bias = reinterpret_cast<const float*>(stage + geo.key_chunk_bytes);
      float bias_v[kNFragments][2];
#pragma unroll
      for (int nf = 0; nf < kNFragments; ++nf) {
        const float2 pair = *reinterpret_cast<const float2*>(bias + nf * 8 + 2 * t);
        bias_v[nf][0] = pair.x;
        bias_v[nf][1] = pair.y;
      }
      // Phase 1: scores and the tile maximum of each of the thread's 4 rows, as balanced trees
      // (short dependency chains: with 2–3 warps per scheduler, latency is the limiter).
      float tile_max[kMTiles][2];
#pragma unroll
      for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          float partial[kNFragments];
#pragma unroll
          for (int nf = 0; nf < kNFragments; ++nf) {
            const float s0 = fmaf(acc[mt][nf][2 * h], p.score_scale_log2, bias_v[nf][0]);
            const float s1 = fmaf(acc[mt][nf][2 * h + 1], p.score_scale_log2, bias_v[nf][1]);
            acc[mt][nf][2 * h] = s0;
            acc[mt][nf][2 * h + 1] = s1;
            partial[nf] = fmaxf(s0, s1);
          }
#pragma unroll
          for (int width = kNFragments / 2; width > 0; width /= 2)
#pragma unroll
            for (int i = 0; i < width; ++i) partial[i] = fmaxf(partial[i], partial[i + width]);
          tile_max[mt][h] = partial[0];
        }
      // Phase 2: the quad (4 lanes share a row) agrees on the maximum.
#pragma unroll
      for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
        for (int h = 0; h < 2; ++h)
          tile_max[mt][h] = fmaxf(tile_max[mt][h], __shfl_xor_sync(0xffffffffu, tile_max[mt][h], 1));
#pragma unroll
      for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
        for (int h = 0; h < 2; ++h)
          tile_max[mt][h] = fmaxf(tile_max[mt][h], __shfl_xor_sync(0xffffffffu, tile_max[mt][h], 2));
      // Phase 3: rescale the running sums and add this tile's terms (4 partial sums per row).
#pragma unroll
      for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const float new_max = fmaxf(row_max[mt][h], tile_max[mt][h]);
          // Guard (−∞) − (−∞): a row that has seen only zero-weight/padded keys keeps sum 0.
          const float reference = new_max == -INFINITY ? 0.f : new_max;
          float partial[4] = {row_sum[mt][h] * fast_exp2(row_max[mt][h] - reference), 0.f, 0.f, 0.f};
#pragma unroll
          for (int nf = 0; nf < kNFragments; ++nf) {
            partial[(2 * nf) % 4] += fast_exp2(acc[mt][nf][2 * h] - reference);
            partial[(2 * nf + 1) % 4] += fast_exp2(acc[mt][nf][2 * h + 1] - reference);
          }
          row_max[mt][h] = new_max;
          row_sum[mt][h] = (partial[0] + partial[1]) + (partial[2] + partial[3]);
        }
    }
  }
  cp_async_wait<0>();

  double error = 0;
#pragma unroll
  for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float sum = row_sum[mt][h];
      sum += __shfl_xor_sync(0xffffffffu, sum, 1);
      sum += __shfl_xor_sync(0xffffffffu, sum, 2);
      const std::int64_t row = row_block0 + warp * tile::kRowsPerWarp + mt * 16 + h * 8 + g;
      if (t == 0 && row < p.rows) error += leave_row(p, row, split, {row_max[mt][h] * kLn2f, sum});
    }
  finish_block<float>(p, error, error_scratch, row_block0, tile::kBlockM);
}

// ---- β_j -----------------------------------------------------------------------------------------
// β_j = h_j/ε + log w_j − s‖q_j‖²/ε (·log2 e when Bias is float), −∞ on padded keys.
template <class Bias>
__global__ void key_bias_kernel(Bias* bias, const double* key_potential, const double* log_weights,
                                const double* scaled_sq_norm, std::int64_t count,
                                std::int64_t padded_count, double eps) {
  const std::int64_t j = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= padded_count) return;
  if (j >= count) {
    bias[j] = -INFINITY;
    return;
  }
  const double h = key_potential != nullptr ? key_potential[j] : 0.0;
  const double beta = (h - scaled_sq_norm[j]) / eps + log_weights[j];
  bias[j] = sizeof(Bias) == 4 ? static_cast<Bias>(beta * 1.44269504088896340736) : static_cast<Bias>(beta);
}

}  // namespace flashsinkhorn::detail::kernels
