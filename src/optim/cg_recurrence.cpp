#include "optim/cg_recurrence.hpp"

#include <cmath>

namespace flashsinkhorn::optim::detail {

cg_recurrence::cg_recurrence(const_span gradient, double eta, mutable_span step)
    : step_(step),
      residual_(gradient.begin(), gradient.end()),
      direction_(gradient.size()),
      hessian_direction_(gradient.size()) {
  copy(gradient, direction_);
  scale(-1, direction_);
  fill(0, step_);
  stop_norm_ = eta * norm2(gradient);
  residual_squared_ = dot(residual_, residual_);
}

double cg_recurrence::multiply(const hessian_product& hessian) {
  hessian(direction_, hessian_direction_);
  return dot(direction_, hessian_direction_);
}

bool cg_recurrence::advance(double step_length) {
  axpy(step_length, direction_, step_);
  axpy(step_length, hessian_direction_, residual_);
  const double next_residual_squared = dot(residual_, residual_);
  if (std::sqrt(next_residual_squared) <= stop_norm_) return true;
  negxpby(residual_, next_residual_squared / residual_squared_, direction_);
  residual_squared_ = next_residual_squared;
  return false;
}

}  // namespace flashsinkhorn::optim::detail
