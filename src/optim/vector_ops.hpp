// The vector algebra of the optimisers — the only code that touches the elements of θ-sized vectors.
// Host implementation (plain loops the compiler vectorises). A device-resident version keeps these
// signatures on device spans (cuBLAS-style dot/axpy/scal, one read-back per dot) and the algorithms
// compile unchanged. All spans of one call have the same length; outputs may alias no input unless
// stated.
#pragma once

#include <vector>

#include "flashsinkhorn/optim/objective.hpp"

namespace flashsinkhorn::optim::detail {

using host_vector = std::vector<double>;

[[nodiscard]] double dot(const_span x, const_span y);
[[nodiscard]] double norm2(const_span x);                 // ‖x‖₂ (scaled, safe from overflow)
void axpy(double alpha, const_span x, mutable_span y);    // y ← αx + y
void scale(double alpha, mutable_span x);                 // x ← αx
void copy(const_span x, mutable_span y);                  // y ← x
void fill(double value, mutable_span x);                  // x ← value·1
void negxpby(const_span x, double beta, mutable_span y);  // y ← −x + βy  (CG: d ← −r + βd)
void add_scaled(const_span x, double alpha, const_span d, mutable_span y);  // y ← x + αd
[[nodiscard]] bool all_finite(const_span x);

// One Adam update, element-wise (adam.hpp): m ← β₁m + (1−β₁)g, v ← β₂v + (1−β₂)g²,
// θ ← θ − step·m/(√v + ε̂) with step = lr·√(1−β₂^k)/(1−β₁^k), ε̂ = ε·√(1−β₂^k) — algebraically the
// bias-corrected update lr·m̂/(√v̂ + ε). Returns ‖Δθ‖₂.
double adam_update(const_span gradient, double beta1, double beta2, double step, double epsilon_hat, mutable_span m,
                   mutable_span v, mutable_span theta);

}  // namespace flashsinkhorn::optim::detail
