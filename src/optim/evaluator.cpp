#include "optim/evaluator.hpp"

#include <algorithm>

namespace flashsinkhorn::optim::detail {

evaluator::evaluator(const objective& f, std::size_t dimension)
    : f_(f), cached_theta_(dimension), cached_gradient_(dimension) {}

double evaluator::trial_value(const_span theta) {
  if (f_.value) {
    ++counts_.values;
    return f_.value(theta);
  }
  ++counts_.gradients;
  copy(theta, cached_theta_);
  cached_value_ = f_.gradient(theta, cached_gradient_);
  cache_valid_ = true;
  return cached_value_;
}

double evaluator::value_and_gradient(const_span theta, mutable_span gradient) {
  if (cache_valid_ && std::equal(theta.begin(), theta.end(), cached_theta_.begin())) {
    cache_valid_ = false;
    copy(cached_gradient_, gradient);
    return cached_value_;
  }
  cache_valid_ = false;
  ++counts_.gradients;
  return f_.gradient(theta, gradient);
}

void evaluator::hvp(const_span theta, const_span v, mutable_span product) {
  ++counts_.hvps;
  f_.hvp(theta, v, product);
}

}  // namespace flashsinkhorn::optim::detail
