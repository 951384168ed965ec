// The dual value's per-point function (core/dual_value.hpp), shared by the host's dual value and the
// CUDA summaries (solve_summary_launch.cu):
//   φ(h) = h                               on a balanced side (ρ ≤ 0: no reach),
//   φ(h) = (ρ + ε/2)·(1 − e^{−h/ρ})        on a side with reach² ρ > 0 (validated reaches are > 0).
#pragma once

#include <cmath>

#include "math/host_device.hpp"

namespace flashsinkhorn::math {

FS_HOST_DEVICE double dual_phi(double h, double eps, double rho) {
  return rho > 0 ? (rho + eps / 2) * -expm1(-h / rho) : h;
}

}  // namespace flashsinkhorn::math
