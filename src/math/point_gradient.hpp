// One entry of a point gradient (backend.hpp, point_gradient_request), shared by the CPU backend
// and the CUDA epilogue kernel:
//   ∇_ic = coefficient · m_i · (p_ic − Σ_j softmax_ij q_jc)
// where `weighted` is the plan pass's Σ_j softmax_ij q_jc and the row mass m_i is
//   w_i                          on a balanced side (the plan's rows are exact),
//   w_i · exp(f_i/ε + lse_i)     on a side with reach, where the damped f differs from T(g) = −ε·lse.
#pragma once

#include <cmath>

#include "math/host_device.hpp"

namespace flashsinkhorn::math {

FS_HOST_DEVICE double plan_row_mass(double weight, bool unbalanced, double potential, double eps, double lse) {
  return unbalanced ? weight * exp(potential / eps + lse) : weight;
}

FS_HOST_DEVICE double point_gradient_entry(double coefficient, double mass, double point, double weighted) {
  return coefficient * mass * (point - weighted);
}

}  // namespace flashsinkhorn::math
