// Host side of the plan pass (backend.hpp, plan_rows_request): per row i of `rows`,
//   lse_i = LSE_j S_ij,  weighted_i = Σ_j softmax_j(S_i·)·V_j,  cost_i = Σ_j softmax_j(S_i·)·C_ij,
// with S_ij = (h_j − C_ij)/ε + log w_j and C_ij = s‖p_i‖² + s‖q_j‖² − 2s·p_i·q_j computed in float64
// from the stored (rounded) operands.
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
  const double* values = nullptr;         // (keys.count, k) or nullptr
  std::int64_t k = 0;
  double* lse = nullptr;                  // (rows.count,)
  double* weighted = nullptr;             // (rows.count, k) or nullptr
  double* cost = nullptr;                 // (rows.count,) or nullptr
};

cudaError_t launch_plan_rows(precision mode, const plan_rows_launch_args& args, cudaStream_t stream);

}  // namespace flashsinkhorn::detail
