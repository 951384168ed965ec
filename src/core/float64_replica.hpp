// A float64 replica of a single-precision solve: a backend of the same kind (CPU or CUDA) in float64
// over the same problem, holding the same potentials f and g, and the context the products take
// (potential_vjp.hpp; the solver makes the backend: solver.cpp, float64_replica_backend).
//
// What it is for: the Schur complement S = diag(c) − Pᵀ·diag(1/a)·P of a plan close to a matching
// (small ε against the spread of the costs, e.g. d = 64 at ε = 0.1) is a weighted graph Laplacian
// with a near-null vector on each of its many weakly coupled components. From single-precision
// passes, c_j·v_j and (Pᵀ·μ)_j cancel to ~1e-5 of their size, so S is indefinite at that level in
// exactly those directions, which the sparse preconditioner S_k (sparse_plan_preconditioner.hpp)
// amplifies: its CG breaks down, or crawls (docs/math.md). The right-hand side must come from the
// same passes as S, or its error in those directions is amplified by S⁺ instead: the whole product is
// redone on the replica, not the solve alone. On float64 passes the system takes the sparse
// preconditioner's few iterations (CPU, 1,000 × 64, 10 iterations of an fp32 solve: 5 against ~950
// with diag(c)). The replica reads the unrounded inputs: its plan differs from the
// single-precision one by that mode's rounding. The reports say when it ran (redone_in_float64).
#pragma once

#include "core/backend.hpp"
#include "core/potential_vjp.hpp"
#include "flashsinkhorn/options.hpp"

namespace flashsinkhorn::detail {

// Whether a product on `context` is redone on a replica when its sparse CG falls short of the
// tolerance (potential_system_settings::stop_when_sparse_falls_short): where the solver handed over
// its replica, which it does for single-precision solves only (solver.cpp, vjp_context).
inline bool redone_in_float64(const potential_vjp_context& context) { return static_cast<bool>(context.float64_backend); }

// Whether a product on `context` skips the single-precision attempt: an earlier one of the same
// solve fell short (potential_vjp_context::start_in_float64), or — for a product that solves a
// sparse-preconditioned system (`sparse_system`), the only kind that falls short
// (potential_system.hpp) — the solved plan foresees the fall (shortfall_forecast.hpp). The wasted
// attempt cost ~25 of 178 ms at 10,000 × 64 on an H100 (docs/cuda_backend.md, session 52).
inline bool starts_in_float64(const potential_vjp_context& context, bool sparse_system) {
  if (!redone_in_float64(context)) return false;
  return context.start_in_float64 || (sparse_system && context.foresees_shortfall && context.foresees_shortfall());
}

// The replica's context: the solver's float64 backend (made on first use, then kept) holding the
// current potentials.
class float64_replica {
 public:
  explicit float64_replica(const potential_vjp_context& context);

  [[nodiscard]] potential_vjp_context context() const { return {compute_, inputs_, eps_, options_}; }

 private:
  const prepared_inputs& inputs_;
  double eps_;
  options options_;  // the solve's, in fp64
  backend& compute_;
};

// `product` (a function of a context returning a report with redone_in_float64) run on the replica of
// `context`, its report marked redone: what a product does when it starts there or falls short.
template <class Product>
auto on_float64_replica(const potential_vjp_context& context, Product&& product) {
  auto report = product(float64_replica(context).context());
  report.redone_in_float64 = true;
  return report;
}

}  // namespace flashsinkhorn::detail
