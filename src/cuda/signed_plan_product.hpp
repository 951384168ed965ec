// The plan's row averages of a signed vector, A(v)_i = Σ_j softmax_j(S_ij)·v_j, through the
// softmin half-step kernels (softmin_launch.hpp) instead of a plan pass. A softmin with the keys'
// log-weights shifted by log v_j computes
//   T_i(v) = −ε·LSE_j [S_ij + log v_j]   (S_ij with the true log-weights; v_j > 0),
// and with T⁰_i = T_i(1), the same kernel on the true weights,
//   Σ_j softmax_j(S_ij)·v_j = exp((T⁰_i − T_i(v))/ε).
// A signed v is split as v⁺ − v⁻, each floored at τ = 1e-300 so that no row's LSE is over −∞ keys
// only (the floor adds ≤ τ to each half), and
//   A(v)_i = exp((T⁰_i − T_i(v⁺))/ε) − exp((T⁰_i − T_i(v⁻))/ε).
// Each half's sum is accumulated like the softmin's own (fp32 per-thread sums, float64 finish), so
// the error is that of fp32 on Σ_j softmax_ij |v_j| — as with a fused FMA pass — and P is never
// rounded to the product's operand format. Two half-steps cost less than one single-column plan
// pass because the softmin kernels are the tuned ones (wgmma on sm_90a, key splits at small n):
// this is what the CG of backend::solve_schur runs, two products per iteration.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/device_buffer.hpp"
#include "cuda/softmin_launch.hpp"
#include "flashsinkhorn/options.hpp"

namespace flashsinkhorn::detail {

// Device scratch of one side's products: two shifted log-weight vectors (keys) and two softmin
// outputs (rows), grown on demand.
struct signed_product_scratch {
  device_buffer<double> log_weights_plus, log_weights_minus, half_plus, half_minus;
};

// Enqueues out_i = scale_i·A(v)_i (scale: nullptr for 1) on `stream` for the half-step `pass`
// (rows, keys, key potential, eps, scratch; its previous/out/damping/blend/error are ignored),
// with reference = T⁰ of that pass (rows.count, float64, from the same mode's softmin on the true
// weights) and v (keys.count, float64). Returns the first launch error.
cudaError_t enqueue_signed_plan_product(precision mode, const softmin_launch_args& pass, const double* reference,
                                        const double* v, const double* scale, double* out,
                                        signed_product_scratch& scratch, cudaStream_t stream);

// Enqueues T⁰ of `pass` into `reference` (rows.count): the half-step on the true log-weights.
cudaError_t enqueue_reference_half_step(precision mode, const softmin_launch_args& pass, double* reference,
                                        cudaStream_t stream);

}  // namespace flashsinkhorn::detail
