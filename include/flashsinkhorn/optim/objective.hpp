// What the optimisers of flashsinkhorn::optim see of a problem: a parameter vector θ ∈ R^p and three
// callbacks. θ can be anything flattened into p doubles — the points of a cloud (p = n·d), a linear map
// W (p = d_in·d_out), a set of weights.
//
// Memory. θ, gradients and directions are host arrays of p doubles (std::span). All vector algebra of
// the optimisers goes through one small internal interface (src/optim/vector_ops.hpp: dot, norm,
// axpy, scale, copy and Adam's element-wise update); the algorithms never index a vector elsewhere.
// A device-resident version (vectors in GPU memory next to the streamed HVP, scalars read back per
// dot product) replaces that file and the span types here; it is not built yet.
#pragma once

#include <functional>
#include <span>
#include <stdexcept>

namespace flashsinkhorn::optim {

using const_span = std::span<const double>;
using mutable_span = std::span<double>;

// y = A·x for a symmetric A: R^p → R^p. x and y never alias.
using symmetric_operator = std::function<void(const_span x, mutable_span y)>;

struct objective {
  // f(θ). Used for trial points (line search, trust-region ratio). May be left empty: trial points
  // then go through `gradient`, and the gradient of an accepted trial is reused — the cheaper choice
  // when the value and the gradient share their work (an OT solve).
  std::function<double(const_span theta)> value;

  // Writes ∇f(θ) into `gradient` (p doubles) and returns f(θ). Required.
  std::function<double(const_span theta, mutable_span gradient)> gradient;

  // Writes ∇²f(θ)·v into `product`. Required by Lanczos users, Newton-CG, trust region and the hybrid
  // (not by Adam). Contract: only called at a θ where `gradient` was evaluated and accepted as the
  // current iterate, so a caller may key a cache of the expensive state (the solve) on θ.
  std::function<void(const_span theta, const_span v, mutable_span product)> hvp;
};

// Thrown by a callback (value, gradient, hvp) to end the run now: a wall-time budget that the
// evaluation in flight would overrun, a user's interrupt. The optimiser drops the iteration in progress
// and returns the last accepted iterate with status `stopped` and its state (Adam's moments, the
// hybrid's checks, the trust radius) as they were before that iteration, so that a run resumed from
// them goes on as if it had not been interrupted. During the evaluation at θ₀ there is nothing to
// return yet: the exception passes through.
class stop_requested : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The Hessian of `f` at θ as a symmetric operator (for lanczos_extremes). Copies θ and f.hvp.
[[nodiscard]] symmetric_operator hessian_at(const objective& f, const_span theta);

}  // namespace flashsinkhorn::optim
