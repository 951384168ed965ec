// The optimisers' access to an objective: counts every callback, checks the sizes of what comes
// back, and implements the trial-point contract of objective.hpp — without a `value` callback a
// trial is evaluated through `gradient`, and the next value_and_gradient at that same θ reuses it.
#pragma once

#include <cstddef>

#include "flashsinkhorn/optim/objective.hpp"
#include "flashsinkhorn/optim/report.hpp"
#include "optim/vector_ops.hpp"

namespace flashsinkhorn::optim::detail {

class evaluator {
 public:
  evaluator(const objective& f, std::size_t dimension);

  // f(θ) at a trial point.
  [[nodiscard]] double trial_value(const_span theta);
  // f(θ) and ∇f(θ) at an iterate.
  double value_and_gradient(const_span theta, mutable_span gradient);
  // ∇²f(θ)·v; θ must be an iterate given to value_and_gradient.
  void hvp(const_span theta, const_span v, mutable_span product);

  [[nodiscard]] const evaluation_counts& counts() const noexcept { return counts_; }

 private:
  const objective& f_;
  evaluation_counts counts_;
  // Last trial evaluated through `gradient` (only used when f_.value is empty).
  host_vector cached_theta_;
  host_vector cached_gradient_;
  double cached_value_ = 0;
  bool cache_valid_ = false;
};

}  // namespace flashsinkhorn::optim::detail
