// Host side of the plan pass (backend.hpp, plan_rows_request): per row i of `rows`,
//   lse_i = LSE_j S_ij,  weighted_i = Σ_j softmax_j(S_i·)·V_j,  cost_i = Σ_j softmax_j(S_i·)·C_ij,
// with S_ij = (h_j − C_ij)/ε + log w_j and C_ij = s‖p_i‖² + s‖q_j‖² − 2s·p_i·q_j from the stored
// (rounded) operands:
//   fp64             float64 throughout (plan_rows_kernel.cuh: a SIMT GEMM's tiles, online softmax;
//                    on rows of ≥ 512 coordinates with args.gemm_scratch, cuBLAS DGEMMs around a
//                    row kernel instead: plan_gemm_pass.hpp, FLASHSINKHORN_FLOAT64_PASS)
//   fp32, FMA dots   (the default on rows of padded d ≤ 16, kernel_variant.hpp) float64 arithmetic on
//                    the stored float points: the one-column and LSE-only passes (the Hessian's CG)
//                    in plan_vector_narrow_launch.hpp's kernel, the others in the same SIMT pass as
//                    fp64, except a point gradient's pass on staged values (values_staged), which
//                    runs the fp32 narrow pass of plan_points_narrow_launch.hpp or, with
//                    FLASHSINKHORN_POINT_GRADIENT=tensor, stays on tensor cores (plan_pass_is_float64)
//   tf32, bf16       on sm_90a with values and no cost: warpgroup MMAs (plan_wgmma_kernel.cuh,
//                    plan_wgmma_streamed_kernel.cuh for wide rows)
//   fp32, tf32, bf16 on tensor cores (plan_mma_kernel.cuh): the scores as in the softmin kernels,
//                    P·V with P and V in tf32 (fp32: 3×TF32), fp32 accumulation, float64 row
//                    finish; one value column (k = 1, no cost) by fp32 FMAs instead (on sm_90a
//                    with wgmma scores: plan_vector_wgmma_launch.hpp); the quadratic pass with a
//                    third operand U = u·Kᵀ beside the scores (its P·V by 3×TF32 in every mode).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/softmin_launch.hpp"
#include "flashsinkhorn/options.hpp"

namespace flashsinkhorn::detail {

struct plan_rows_launch_args {
  device_cloud_view rows;
  device_cloud_view keys;
  const double* key_potential = nullptr;  // (keys.count,)
  double cost_scale = 1;
  double eps = 1;
  const double* values = nullptr;         // (keys.count, k), rows values_stride apart, or nullptr
  std::int64_t values_stride = 0;         // 0: k
  std::int64_t k = 0;
  // Per-row directions u_i: the pass is then the fused quadratic pass Σ_j softmax_ij (u_i·q_j) V_j.
  // plan_pass_is_float64: (rows.count, rows.dim) float64 (plan_rows_kernel.cuh). Tensor-core modes: stored like the
  // rows' points, (rows.padded_count, padded_dim) in the mode's format with zero padding
  // (plan_mma_kernel.cuh's quadratic pass, values staged as tiles). Giving the other one refuses
  // (cudaErrorInvalidValue).
  const double* directions = nullptr;
  const void* stored_directions = nullptr;
  // The z_j of a quadratic pass (backend.hpp, key_directions), in the same two forms: fp64
  // (keys.count, dim) float64; tensor-core modes stored like the keys' points. nullptr: z = q.
  const double* key_directions = nullptr;
  const void* stored_key_directions = nullptr;
  // Tensor-core modes: values_scratch already holds the staged Vᵀ (stage_plan_values), `values`
  // is not read.
  bool values_staged = false;
  // The values are the keys' own stored points (a point gradient in fp32 / tf32 / bf16, k = dim):
  // in fp32 on narrow rows the pass reads them with the keys and stages nothing
  // (plan_points_narrow_launch.hpp); elsewhere values_staged must hold them staged.
  bool values_are_key_points = false;
  double* lse = nullptr;                  // (rows.count,)
  double* weighted = nullptr;             // (rows.count, k) or nullptr
  double* cost = nullptr;                 // (rows.count,) or nullptr
  // Scratch of the tensor-core pass: β (keys.padded_count floats) and the staged Vᵀ
  // (plan_values_bytes); unused in fp64.
  float* bias_scratch = nullptr;
  void* values_scratch = nullptr;
  // The key-split partial states of the one-column pass (plan_vector_partial_bytes) and of the SIMT
  // pass (plan_simt_partial_bytes); with less, a pass runs with fewer splits (at least one).
  void* partial_scratch = nullptr;
  std::int64_t partial_scratch_capacity = 0;
  // The fp64 GEMM pass's block of dot products (plan_gemm_pass.hpp, plan_gemm_scratch_elements):
  // without it, or too small, the pass runs on the SIMT kernel.
  double* gemm_scratch = nullptr;
  std::int64_t gemm_scratch_elements = 0;
  int sm_count = 132;
  int max_shared_bytes = 48 * 1024;  // cudaDevAttrMaxSharedMemoryPerBlockOptin
};

// How the tensor-core modes stage a pass's values (none in fp64 or without values), which also
// names the kernel that reads them:
//   vector          k = 1 without the cost: one fp32 row (keys_padded floats), for the FMA pass of
//                   plan_mma_kernel.cuh or plan_vector_wgmma_kernel.cuh, exact to fp32 in every mode
//   tiles           Vᵀ (columns padded to 64, keys_padded) in the P·V operand format (tf32; fp32
//                   for the 3×TF32 mode), for plan_mma_kernel.cuh
//   permuted_tiles  the same, key-permuted, for the Hopper kernels (plan_wgmma_kernel.cuh for rows
//                   of ≤ 8 k-steps, plan_wgmma_streamed_kernel.cuh for wider rows of whole panels):
//                   tf32 and bf16 with k ≥ 2 values and without the cost, on sm_90a
// A quadratic pass (stored_directions) always stages tiles: only plan_mma_kernel.cuh fuses it.
enum class staged_values_layout { none, vector, tiles, permuted_tiles };

staged_values_layout plan_values_layout(precision mode, std::int64_t padded_dim, std::int64_t k, bool want_cost,
                                        int max_shared_bytes, bool quadratic = false);

// Bytes of the staged values of k columns in `layout`.
std::int64_t plan_values_bytes(staged_values_layout layout, std::int64_t k, std::int64_t keys_padded);

// Stages float values (keys, k), rows `stride` apart, into `staged` (plan_values_bytes) in
// `layout`: what launch_plan_rows does for float64 values, done once for values that are reused
// (the keys' exact points of a point gradient; launched with values_staged).
cudaError_t stage_plan_values(precision mode, staged_values_layout layout, const float* values, std::int64_t stride,
                              std::int64_t keys, std::int64_t keys_padded, std::int64_t k, void* staged,
                              cudaStream_t stream);

// Bytes of the partial states the one-column pass (staged_values_layout::vector) of `rows`
// against `keys` splits its keys into on a device of `sm_count` SMs (0 when it does not split).
std::int64_t plan_vector_partial_bytes(precision mode, const device_cloud_view& rows, const device_cloud_view& keys,
                                       int sm_count, int max_shared_bytes);

// Bytes of the partial states the SIMT pass (plan_pass_is_float64) with k value columns splits its
// keys into on a device of `sm_count` SMs (0 when it does not split), with or without directions.
std::int64_t plan_simt_partial_bytes(precision mode, const device_cloud_view& rows, const device_cloud_view& keys,
                                     std::int64_t k, int sm_count);

// Whether the mode's plan passes run the SIMT kernel in float64 arithmetic (and so take float64
// directions): fp64, and fp32 with FMA dots (kernel_variant.hpp, fp32_fma_dots_for), whose softmin
// forms fp32 scores by FMA; its passes are float64 so that the x-rows and y-rows passes of the
// Hessian's conjugate gradients apply one matrix (3×TF32 dots of the two orientations differ by ~1%
// an entry at a cost scale of 10³/ε, and the CG then does not converge).
bool plan_pass_is_float64(precision mode, std::int64_t padded_dim);

cudaError_t launch_plan_rows(precision mode, const plan_rows_launch_args& args, cudaStream_t stream);

// Whether the dense preconditioner's s comes from launch_plan_softmax in the mode: fp64 and fp32,
// whose passes are accurate to ~1e-6 an entry or better. Not tf32 and bf16: their tensor-core
// passes round the plan to ~1e-3, and an s from the same passes (P·I_m) preconditions their
// operator better — on an H100 at 1,000 × 64 the tf32 attempt took 4 CG iterations with a float64
// s against 1 with its own (bench/results/suite_h100_2026-12-07_s55b.jsonl against _s55a).
bool plan_softmax_applies(precision mode);

// The plan's rows s_ij = exp(S_ij − lse_i) in float64 from the stored points (double or float),
// whatever the mode's own passes compute in: lse_i into args.lse by the SIMT LSE-only pass, then s
// into args.weighted (rows.count × keys.count, row-major) by plan_softmax_kernel
// (plan_rows_kernel.cuh), whose score FMA chains are that pass's, so Σ_j s_ij = 1 to rounding. n·m·d float64 FMAs twice, where a pass
// with V = I_m took n·m·(d + m) and an m × m identity. cudaErrorInvalidValue where
// !plan_softmax_applies(mode) or without args.lse / args.weighted.
cudaError_t launch_plan_softmax(precision mode, const plan_rows_launch_args& args, cudaStream_t stream);

}  // namespace flashsinkhorn::detail
