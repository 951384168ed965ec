// Adam's moments and step counter, advanced one step at a time (shared by optim::adam and the hybrid).
#pragma once

#include <cstddef>

#include "flashsinkhorn/optim/adam.hpp"
#include "optim/evaluator.hpp"
#include "optim/vector_ops.hpp"

namespace flashsinkhorn::optim::detail {

class adam_state {
 public:
  // From `initial` (a previous run's moments; empty: m = v = 0, k = 0). Throws invalid_argument when
  // its vectors are not both empty or both of `dimension` values, or are not finite (v ≥ 0).
  adam_state(const adam_options& options, std::size_t dimension, const adam_moments& initial);

  // θ ← θ − lr·m̂/(√v̂ + ε) after folding `gradient` (∇f(θ)) into the moments. Returns ‖Δθ‖₂.
  double step(const_span gradient, mutable_span theta);

  [[nodiscard]] int steps() const noexcept { return steps_; }
  [[nodiscard]] adam_moments moments() const { return {first_moment_, second_moment_, steps_}; }

 private:
  adam_options options_;
  host_vector first_moment_;   // m
  host_vector second_moment_;  // v
  int steps_ = 0;
};

// One logged Adam iteration at result.theta with `gradient` = ∇f(θ): the step, f and ∇f at the new θ
// (into result and `gradient`), and its record (step_size = lr) in result.history and on_iteration.
void adam_iteration(adam_state& state, evaluator& evaluate, const adam_options& options, optimizer_result& result,
                    mutable_span gradient);

// adam_iteration, undone if a callback stops the run during it (stop_requested): result, `gradient`
// and the moments as before, status stopped; returns false then.
bool adam_iteration_unless_stopped(adam_state& state, evaluator& evaluate, const adam_options& options,
                                   optimizer_result& result, mutable_span gradient);

}  // namespace flashsinkhorn::optim::detail
