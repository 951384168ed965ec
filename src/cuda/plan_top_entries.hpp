// Host side of the top-entries pass (plan_top_entries_kernel.cuh): per row i of `rows` the
// kSparsePlanEntries largest entries of the row softmax s_i = softmax_j((h_j − C_ij)/ε + log w_j)
// against `keys`, as key indices (−1: none) and values s_ij, both (rows.count, K) row-major on
// the device. fp32 scores on CUDA cores from the stored operands, whatever the mode: it feeds a
// preconditioner (sparse_schur.hpp), never a result.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/device_buffer.hpp"
#include "cuda/softmin_launch.hpp"
#include "flashsinkhorn/options.hpp"

namespace flashsinkhorn::detail {

inline constexpr int kTopEntries = 8;  // core/sparse_plan_preconditioner.hpp's kSparsePlanEntries

struct plan_top_entries_args {
  device_cloud_view rows;
  device_cloud_view keys;                 // its points: η⊙q (the keys' role)
  const double* key_potential = nullptr;  // h (keys.count,), or nullptr for 0
  double cost_scale = 1;
  double eps = 1;
  int sm_count = 132;
  int* entry_keys = nullptr;       // (rows.count, kTopEntries)
  double* entry_values = nullptr;  // (rows.count, kTopEntries)
};

// Enqueues the pass; the key-split partial states live in `scratch` (grown as needed: call with
// nothing in flight that uses it).
cudaError_t launch_plan_top_entries(precision mode, const plan_top_entries_args& args,
                                    device_buffer<unsigned char>& scratch, cudaStream_t stream);

}  // namespace flashsinkhorn::detail
