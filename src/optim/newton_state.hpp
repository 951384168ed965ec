// What the two Newton-type methods (newton_cg, trust_region) carry through their iterations: the
// evaluator, the iterate (result) with its gradient, scratch for the step and the trial point, the
// forcing sequence η_k of the inner CG, and the Hessian product at the current iterate.
#pragma once

#include <string_view>
#include <vector>

#include "flashsinkhorn/optim/forcing.hpp"
#include "flashsinkhorn/optim/objective.hpp"
#include "flashsinkhorn/optim/report.hpp"
#include "optim/cg_recurrence.hpp"
#include "optim/evaluator.hpp"
#include "optim/forcing_sequence.hpp"
#include "optim/iteration_bookkeeping.hpp"
#include "optim/vector_ops.hpp"

namespace flashsinkhorn::optim::detail {

struct newton_state {
  // Checks f (it must provide the HVP), evaluates at θ₀ and starts the forcing sequence there.
  // Throws as validate_objective and start_at do; `method` names the caller.
  newton_state(const objective& f, std::vector<double> theta0, const forcing_options& forcing_options,
               double gradient_tolerance, std::string_view method);
  // Not copyable or movable: `hessian` refers to `evaluate` and `result`.
  newton_state(const newton_state&) = delete;
  newton_state& operator=(const newton_state&) = delete;

  evaluator evaluate;
  host_vector gradient, step, trial;
  optimizer_result result;
  forcing_sequence forcing;
  hessian_product hessian;  // ∇²f(result.theta)·v
};

// iteration() — one iteration of the method on `state`, returning false when the method must stop —
// undone if a callback stops the run during it (stop_requested): the iterate, its gradient and the
// forcing sequence as before, status stopped, and false. A method's own state (the trust radius) the
// iteration should commit only when it returns.
template <class Iteration>
bool iterate_unless_stopped(newton_state& state, Iteration&& iteration) {
  const iterate_checkpoint checkpoint(state.result, state.gradient);
  const forcing_sequence forcing = state.forcing;
  try {
    return iteration();
  } catch (const stop_requested&) {
    checkpoint.restore(state.result, state.gradient);
    state.forcing = forcing;
    return false;
  }
}

}  // namespace flashsinkhorn::optim::detail
