// Backtracking line search for the sufficient-decrease (Armijo) condition
//   f(θ + αs) ≤ f(θ) + c₁ α gᵀs,   α = 1, b, b², … (b = backtrack_factor),
// for a descent direction s (gᵀs ≤ 0). A non-finite trial value counts as a rejection.
#pragma once

#include "optim/evaluator.hpp"

namespace flashsinkhorn::optim::detail {

struct armijo_outcome {
  bool found = false;
  double step_size = 0;  // the accepted α
  double value = 0;      // f(θ + αs)
};

// trial: output, θ + αs for the accepted α (or the last one tried).
armijo_outcome armijo_search(evaluator& f, const_span theta, double value, double slope, const_span direction,
                             double c1, double backtrack_factor, int max_backtracks, mutable_span trial);

}  // namespace flashsinkhorn::optim::detail
