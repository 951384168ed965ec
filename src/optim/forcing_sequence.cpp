#include "optim/forcing_sequence.hpp"

#include <algorithm>
#include <cmath>

namespace flashsinkhorn::optim::detail {

forcing_sequence::forcing_sequence(const forcing_options& options, double gradient_tolerance, double gradient_norm)
    : options_(options), gradient_tolerance_(gradient_tolerance), previous_gradient_norm_(gradient_norm) {
  eta_ = safeguarded(options.initial, gradient_norm);
}

void forcing_sequence::accept(double gradient_norm) {
  // Choice 2: η_k = γ(‖g_k‖/‖g_{k−1}‖)^α, kept ≥ γη_{k−1}^α when that is > 0.1.
  const double ratio = previous_gradient_norm_ > 0 ? gradient_norm / previous_gradient_norm_ : 0;
  double eta = options_.gamma * std::pow(ratio, options_.exponent);
  const double floor_from_previous = options_.gamma * std::pow(eta_, options_.exponent);
  if (floor_from_previous > 0.1) eta = std::max(eta, floor_from_previous);
  eta_ = safeguarded(eta, gradient_norm);
  previous_gradient_norm_ = gradient_norm;
}

double forcing_sequence::safeguarded(double eta, double gradient_norm) const {
  // Oversolving guard: ‖r‖ ≤ η‖g‖ need not go below half the outer tolerance.
  if (gradient_norm > 0) eta = std::max(eta, 0.5 * gradient_tolerance_ / gradient_norm);
  return std::min(eta, options_.maximum);
}

}  // namespace flashsinkhorn::optim::detail
