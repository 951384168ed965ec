// Host side of the fp32 point-gradient pass on narrow rows (plan_points_narrow_kernel.cuh): the
// plan pass of backend::point_gradient when the values are the keys' own stored points
// (plan_rows_launch_args::values_are_key_points) in the fp32 mode with FMA dots.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/plan_rows_launch.hpp"
#include "flashsinkhorn/options.hpp"

namespace flashsinkhorn::detail {

// Whether a point gradient of rows of `padded_dim` (fp32 storage) and `dim` coordinates in `mode`
// runs this pass in this process: fp32 with FMA dots (fp32_fma_dots_for) and the environment
// variable FLASHSINKHORN_POINT_GRADIENT (read once): unset, empty or 'narrow' run it (the default since
// it ran on the H200, 2026-12-04: ~9× faster than the tensor-core pass and 10–100× more accurate),
// 'tensor' keeps the tensor-core pass (3×TF32 products); anything else throws invalid_argument.
bool plan_points_narrow_applies(precision mode, std::int64_t padded_dim, std::int64_t dim);
bool parse_point_gradient_pass(const char* name);

// Bytes of its key-split partial states (0 when it does not split).
std::int64_t plan_points_narrow_partial_bytes(const device_cloud_view& rows, const device_cloud_view& keys,
                                              int sm_count);

// Enqueues the pass for args with values_are_key_points (k = rows.dim): β (float, log₂ units) into
// args.bias_scratch, lse and weighted (rows, k) out; the keys split when args.partial_scratch holds the
// partial states. false: it does not apply (nothing enqueued, `status` untouched).
bool launch_plan_points_narrow(precision mode, const plan_rows_launch_args& args, cudaStream_t stream,
                               cudaError_t& status);

}  // namespace flashsinkhorn::detail
