// Host side of the softmin kernels: one plain params struct and the launch entry point.
//
// One half-step (backend.hpp, softmin_step) is two launches on `stream`, no host sync:
//   1. key_bias     β_j = h_j/ε + log w_j − s‖q_j‖²/ε   (·log2 e for the float kernels), −∞ on padding
//   2. softmin      per row i, over the keys of one split: the online (max, Σexp) of
//                   S_ij = (2s/ε)·p_i·q_j + β_j on tensor cores; with one split the same kernel
//                   finishes the row (below); else each CTA writes its partial lse_state and the
//                   row block's last CTA merges the splits (math::combine) and finishes the rows
//                   (softmin_kernel.cuh, finish_block).
// Finishing row i:  T_i = s‖p_i‖² − ε·LSE_j S_ij, new_i = damping·T_i,
//                   out_i = (1 − blend)·prev_i + blend·new_i,
//                   error += Σ_i w_i·|exp((prev_i − new_i)/ε) − 1|  (one atomicAdd per CTA).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "flashsinkhorn/options.hpp"

namespace flashsinkhorn::detail {

// One prepared cloud on the device, in the storage type of the precision mode
// (fp64: double; fp32, tf32: float; bf16: __nv_bfloat16).
struct device_cloud_view {
  const void* points = nullptr;         // (padded_count, padded_dim), zeros in the padding
  const double* scaled_sq_norm = nullptr;  // (count,)  s·‖p_i‖² from the stored (rounded) values
  const double* weights = nullptr;      // (count,)
  const double* log_weights = nullptr;  // (count,)
  std::int64_t count = 0;
  std::int64_t padded_count = 0;        // multiple of tile::kRowPadding
  std::int64_t dim = 0;
  std::int64_t padded_dim = 0;          // row stride of `points`, in elements
};

struct softmin_launch_args {
  device_cloud_view rows;
  device_cloud_view keys;
  const double* key_potential = nullptr;  // (keys.count,) or nullptr for h = 0
  const double* previous = nullptr;       // (rows.count,) or nullptr (then prev = 0)
  double* out = nullptr;                  // (rows.count,)
  double cost_scale = 1;
  double eps = 1;
  double damping = 1;
  double blend = 1;
  bool accumulate_error = false;
  double* error = nullptr;                // one device double
  void* bias_scratch = nullptr;           // keys.padded_count × 8 bytes
  void* partial_scratch = nullptr;        // softmin_partial_bytes(...) bytes
  std::int64_t partial_scratch_capacity = 0;
  // The row blocks' split counts (splits > 1): zeros before the first launch, left so by every
  // launch (softmin_kernel.cuh, finish_block); at least softmin_split_counts(rows.padded_count).
  // One array for every launch of a backend, whatever its rows: the counts must not share memory
  // with the partial states, whose layout depends on the launch.
  unsigned* split_counts = nullptr;
  std::int64_t split_count_capacity = 0;
  int sm_count = 132;
  int max_shared_bytes = 48 * 1024;       // cudaDevAttrMaxSharedMemoryPerBlockOptin
};

// Number of key splits the launcher will use for this shape (1 = fully fused), the partial-state
// bytes that many splits need, and the split counts a launch over `padded_rows` rows may use.
int softmin_split_count(precision mode, const device_cloud_view& rows, const device_cloud_view& keys,
                        int sm_count, int max_shared_bytes);
std::int64_t softmin_partial_bytes(precision mode, std::int64_t padded_rows, int splits);
std::int64_t softmin_split_counts(std::int64_t padded_rows);

// Feature padding of the stored points: the tensor-core kernels read rows in groups of 16 32-bit
// words (two mma.sync k-steps, one 128-bit load per lane; four wgmma k-steps of 32 bytes):
// 16 tf32/fp32 or 32 bf16 values. fp64 reads element-wise.
std::int64_t softmin_padded_dim(precision mode, std::int64_t dim);

// Which kernel a softmin of `rows` rows of `dim` coordinates over `keys` keys runs in this mode on the
// current device (`sm_count` SMs): a wgmma variant (sm_90a), "mma.sync" or "fma" (fp64; fp32 and, at
// d ≤ 2 on long key splits, tf32 on narrow rows). For benchmarks and logs.
const char* softmin_kernel_name(precision mode, std::int64_t dim, std::int64_t rows, std::int64_t keys, int sm_count,
                                int max_shared_bytes);
// And how many key splits it cuts each row block's keys into (for benchmarks and logs).
int softmin_key_splits(precision mode, std::int64_t dim, std::int64_t rows, std::int64_t keys, int sm_count,
                       int max_shared_bytes);
// And whether it runs the streamed kernel in key pairs (clusters of two CTAs sharing each key panel).
bool softmin_key_pairs(precision mode, std::int64_t dim, std::int64_t rows, std::int64_t keys, int sm_count,
                       int max_shared_bytes);

// The Hopper kernels' shared-memory plan for a mode and padded row width on a device offering
// `max_shared_bytes` per block, whatever device is present: which one would run ("wgmma" with a
// resident query block, "wgmma-streamed", or "" when neither fits or the mode has none), its ring
// depth and dynamic shared memory per CTA (at tile::kWgmmaCtasPerSm / kWgmmaStreamedCtasPerSm
// CTAs per SM). For tests and logs.
struct wgmma_plan {
  const char* kernel = "";
  int stages = 0;
  int shared_bytes = 0;
};
wgmma_plan softmin_wgmma_plan(precision mode, std::int64_t padded_dim, int max_shared_bytes);

// The wgmma kernels run where they were compiled (an sm_90a target in
// FLASHSINKHORN_CUDA_ARCHITECTURES), on compute capability 9.0 (the current device), unless
// FLASHSINKHORN_KERNEL=mma is chosen for `mode` (kernel_variant.hpp). tf32 and bf16 only.
bool wgmma_available(precision mode);

// Enqueues the half-step on `stream`. Returns cudaSuccess or the launch error (never throws).
cudaError_t launch_softmin(precision mode, const softmin_launch_args& args, cudaStream_t stream);

}  // namespace flashsinkhorn::detail
