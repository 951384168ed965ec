// Host side of the Hopper one-column plan pass (plan_vector_wgmma_kernel.cuh): the products P·v of
// the HVP's conjugate gradients at the cost of a softmin half-step. launch_plan_rows
// (plan_rows_launch.cu) runs it for a staged_values_layout::vector pass and for the LSE-only pass
// (k = 0, no cost) wherever it applies, and the mma.sync passes (plan_mma_kernel.cuh) elsewhere.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/plan_rows_launch.hpp"
#include "flashsinkhorn/options.hpp"

namespace flashsinkhorn::detail {

// The ring depth of the pass for rows of `padded_dim` on this device, with two CTAs per SM in
// `max_shared_bytes` per block; 0 where it does not run: not tf32/bf16, no wgmma here
// (wgmma_available), or rows wider than the resident query block holds.
int plan_vector_wgmma_stages(precision mode, std::int64_t padded_dim, int max_shared_bytes);

// Bytes of its key-split partial states for `rows` against `keys` (0 when it does not split or
// does not run).
std::int64_t plan_vector_wgmma_partial_bytes(precision mode, const device_cloud_view& rows,
                                             const device_cloud_view& keys, int sm_count, int max_shared_bytes);

// Enqueues the pass with β in args.bias_scratch and, for k = 1, the fp32 v_j in
// args.values_scratch (staged as the vector layout); k = 0 is the LSE-only pass. The keys split
// when args.partial_scratch holds the partial states.
// false: it does not apply here (nothing enqueued, `status` untouched); else `status` is the
// launch's.
bool launch_plan_vector_wgmma(precision mode, const plan_rows_launch_args& args, cudaStream_t stream,
                              cudaError_t& status);

}  // namespace flashsinkhorn::detail
