// Host side of the fp32 one-column plan pass on narrow rows (plan_vector_narrow_kernel.cuh): the
// products P·v of the Hessian's conjugate gradients in the fp32 mode with FMA dots
// (kernel_variant.hpp, fp32_fma_dots_for), at the cost of a softmin half-step, with scores from
// both potentials so that the two orientations apply one matrix. launch_plan_rows
// (plan_rows_launch.cu) runs it for the one-column and LSE-only passes given the rows' own
// potential (plan_rows_launch_args::row_potential); the fp32 mode's other passes on narrow rows
// stay float64 (plan_pass_is_float64).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/plan_rows_launch.hpp"
#include "flashsinkhorn/options.hpp"

namespace flashsinkhorn::detail {

// Whether the pass of `args` is one this kernel runs: fp32 with FMA dots, the row potential given,
// k ≤ 1, no cost, no directions.
bool plan_vector_narrow_applies(precision mode, const plan_rows_launch_args& args);

// Bytes of its key-split partial states for `rows` against `keys` (0 when it does not split).
std::int64_t plan_vector_narrow_partial_bytes(const device_cloud_view& rows, const device_cloud_view& keys,
                                              int sm_count);

// Enqueues the pass with β in args.bias_scratch and, for k = 1, the fp32 v_j in
// args.values_scratch (staged as the vector layout); the keys split when args.partial_scratch
// holds the partial states. false: it does not apply (nothing enqueued, `status` untouched).
bool launch_plan_vector_narrow(precision mode, const plan_rows_launch_args& args, cudaStream_t stream,
                               cudaError_t& status);

}  // namespace flashsinkhorn::detail
