// Host side of the float64 one-column plan pass on the fp32 mode's narrow rows
// (plan_vector_narrow_kernel.cuh): the passes of the Hessian's conjugate gradients (its products
// and the masses of core/solved_plan.cpp) and the LSE-only pass, where the fp32 mode's plan
// passes run in float64 (plan_rows_launch.hpp, plan_pass_is_float64). launch_plan_rows runs it for
// those passes; the others (several value columns, the cost, directions) stay on the SIMT pass.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/plan_rows_launch.hpp"
#include "flashsinkhorn/options.hpp"

namespace flashsinkhorn::detail {

// Whether the pass of `args` is one this kernel runs: fp32 with FMA dots (fp32_fma_dots_for),
// values not staged, k ≤ 1, no cost, no directions.
bool plan_vector_narrow_applies(precision mode, const plan_rows_launch_args& args);

// Bytes of its key-split partial states for `rows` against `keys` (0 when it does not split).
std::int64_t plan_vector_narrow_partial_bytes(const device_cloud_view& rows, const device_cloud_view& keys,
                                              int sm_count);

// Enqueues the pass: β (float64) into args.bias_scratch (8 bytes a key), v read from args.values
// (float64, column 0 of rows values_stride apart); the keys split when args.partial_scratch holds
// the partial states. false: it does not apply (nothing enqueued, `status` untouched).
bool launch_plan_vector_narrow(precision mode, const plan_rows_launch_args& args, cudaStream_t stream,
                               cudaError_t& status);

}  // namespace flashsinkhorn::detail
