// The wall-time budget of an optimiser run (the options' max_seconds): measured from the run's start
// on the steady clock, checked between iterations — an iteration (its gradients, Hessian products)
// that has started finishes, so a run overshoots by at most one iteration. +∞: no budget.
#pragma once

#include <chrono>
#include <cmath>

namespace flashsinkhorn::optim::detail {

class wall_clock_budget {
 public:
  explicit wall_clock_budget(double max_seconds) : start_(std::chrono::steady_clock::now()), seconds_(max_seconds) {}

  [[nodiscard]] double elapsed() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }
  // Seconds left (≤ 0 once spent; +∞ without a budget).
  [[nodiscard]] double left() const { return std::isinf(seconds_) ? seconds_ : seconds_ - elapsed(); }
  [[nodiscard]] bool spent() const { return left() <= 0; }

 private:
  std::chrono::steady_clock::time_point start_;
  double seconds_;
};

}  // namespace flashsinkhorn::optim::detail
