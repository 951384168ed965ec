#include "optim/armijo_search.hpp"

#include <cmath>

namespace flashsinkhorn::optim::detail {

armijo_outcome armijo_search(evaluator& f, const_span theta, double value, double slope, const_span direction,
                             double c1, double backtrack_factor, int max_backtracks, mutable_span trial) {
  armijo_outcome outcome;
  double step_size = 1;
  for (int attempt = 0; attempt <= max_backtracks; ++attempt, step_size *= backtrack_factor) {
    add_scaled(theta, step_size, direction, trial);
    const double trial_value = f.trial_value(trial);
    if (std::isfinite(trial_value) && trial_value <= value + c1 * step_size * slope) {
      outcome = {true, step_size, trial_value};
      break;
    }
  }
  return outcome;
}

}  // namespace flashsinkhorn::optim::detail
