// The fp64 mode's plan pass on the float64 tensor cores: cuBLAS DGEMMs around a row kernel, a block
// of B rows at a time, instead of the SIMT pass's n·m·d FMAs on the SIMT pipe
// (plan_rows_kernel.cuh), which bound the HVP's products at d ≥ 512 (docs/cuda_backend.md, session 57):
//   Gᵀ = Q·P_bᵀ                  DGEMM, the block's dot products p_i·q_j (B × m, into the scratch)
//   C_ij = s‖p_i‖² + s‖q_j‖² − 2s·G_ij,  S_ij = (h_j − C_ij)/ε + log w_j
//   lse_i = LSE_j S_ij,  W_ij = exp(S_ij − lse_i) over G,  cost_i = Σ_j W_ij C_ij
//                                plan_gemm_rows_kernel: one CTA a row, two sweeps over it
//   weighted_b = W·V             DGEMM (B × k), V rows values_stride apart
// C_ij is the SIMT pass's expansion from the same stored norms; only its dot product is summed in
// the DGEMM's order rather than one FMA chain, so the x-rows and y-rows passes of the Schur
// complement's products apply transposes of one matrix to float64 rounding (not to the bit, as the
// SIMT pass does): an asymmetry of ~10⁻¹⁶·s·|p·q|/ε an entry, far below the CG's tolerances.
// Not the quadratic pass (directions): it stays on the SIMT pass.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/plan_rows_launch.hpp"
#include "flashsinkhorn/options.hpp"

namespace flashsinkhorn::detail {

// Whether the fp64 mode's passes over rows of `padded_dim` coordinates run here when their scratch
// is there (FLASHSINKHORN_FLOAT64_PASS, kernel_variant.hpp): by default on rows of at least
// kPlanGemmMinAutoDim coordinates. Measured (H100, session 58, 941e956, Solver.hvp at 10,000 fp32,
// its products on the float64 replica, GEMM vs SIMT in one call,
// bench/results/float64_pass_ab_h100_2026-12-07_s58.json): d = 512 713 vs 967 ms, d = 1,024 1,571
// vs 2,533 ms, but d = 64 121 vs 103 ms (the row kernel's two sweeps and the block's memory traffic
// outweigh dot products that short); d = 128–256 unmeasured, so they stay SIMT.
inline constexpr std::int64_t kPlanGemmMinAutoDim = 512;
bool plan_gemm_pass_enabled(precision mode, std::int64_t padded_dim);

// The scratch (float64 elements) a pass of `rows` against `keys` asks for: B·keys for the largest
// B ≤ rows within 256 MiB; 0 (the SIMT pass) where that B is under kPlanGemmMinBlockRows and rows
// (more than 2²⁵/64 = 524,288 keys).
inline constexpr std::int64_t kPlanGemmMinBlockRows = 64;
std::int64_t plan_gemm_scratch_elements(std::int64_t rows, std::int64_t keys);

// Whether a pass runs here: plan_gemm_pass_enabled, no directions, and args.gemm_scratch holding
// kPlanGemmMinBlockRows rows of the keys (or all rows).
bool plan_gemm_pass_applies(precision mode, const plan_rows_launch_args& args);

// The pass on points stored as double (the fp64 mode's), a block of rows at a time in the scratch.
// Throws invalid_argument where the scratch is short or directions are given, cuda_error /
// out_of_memory where cuBLAS or a launch fails.
void enqueue_plan_gemm_rows(const plan_rows_launch_args& args, cudaStream_t stream);

// The plan's rows s_ij = W_ij (launch_plan_softmax's contract: lse into args.lse, s into
// args.weighted, rows.count × keys.count) in one block, args.weighted serving as the scratch.
void enqueue_plan_gemm_softmax(const plan_rows_launch_args& args, cudaStream_t stream);

}  // namespace flashsinkhorn::detail
