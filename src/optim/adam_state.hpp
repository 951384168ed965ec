// Adam's moments and step counter, advanced one step at a time (shared by optim::adam and the hybrid).
#pragma once

#include <cstddef>

#include "flashsinkhorn/optim/adam.hpp"
#include "optim/evaluator.hpp"
#include "optim/vector_ops.hpp"

namespace flashsinkhorn::optim::detail {

class adam_state {
 public:
  adam_state(const adam_options& options, std::size_t dimension);

  // θ ← θ − lr·m̂/(√v̂ + ε) after folding `gradient` (∇f(θ)) into the moments. Returns ‖Δθ‖₂.
  double step(const_span gradient, mutable_span theta);

  [[nodiscard]] int steps() const noexcept { return steps_; }

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

}  // namespace flashsinkhorn::optim::detail
