// A float64 replica of a solve on the CPU: a CPU backend in float64 over the same prepared problem,
// holding the same potentials f and g, and the context the products take (potential_vjp.hpp).
//
// What it is for: the Schur complement S = diag(c) − Pᵀ·diag(1/a)·P of a plan close to a matching
// (small ε against the spread of the costs, e.g. d = 64 at ε = 0.1) is a weighted graph Laplacian
// with a near-null vector on each of its many weakly coupled components. From single-precision
// passes, c_j·v_j and (Pᵀ·μ)_j cancel to ~1e-5 of their size, so S is indefinite at that level in
// exactly those directions, which the sparse preconditioner S_k (sparse_plan_preconditioner.hpp)
// amplifies, and its CG breaks down (docs/math.md). The right-hand side must come from the same
// passes as S, or its error in those directions is amplified by S⁺ instead: the whole product is
// redone on the replica, not the solve alone. On float64 passes the system takes the sparse
// preconditioner's few iterations (1,000 × 64, 10 iterations of an fp32 solve: 5 against ~950 with
// diag(c)). The replica's passes read the prepared (unrounded) points; its plan differs from the
// single-precision one by that mode's rounding.
#pragma once

#include <memory>
#include <string>

#include "core/backend.hpp"
#include "core/potential_vjp.hpp"
#include "flashsinkhorn/options.hpp"

namespace flashsinkhorn::detail {

// Whether a product on `context` is redone on a replica when the host's sparse CG breaks down
// (potential_system_settings::stop_at_host_sparse_breakdown): the CPU backend in a single-precision
// mode. (The CUDA backend solves on the device and keeps its diag(c) fallback.)
inline bool redone_in_float64(const potential_vjp_context& context) {
  return context.compute.name() == "cpu" && context.solve_options.precision != precision::fp64;
}

class float64_replica {
 public:
  // `context`: a solve whose prepared problem is on the host (context.inputs). Threads: the
  // context's CPU threads.
  explicit float64_replica(const potential_vjp_context& context);

  [[nodiscard]] potential_vjp_context context() const { return {*compute_, inputs_, eps_, options_}; }

 private:
  const prepared_inputs& inputs_;
  double eps_;
  options options_;  // the solve's, in fp64
  std::unique_ptr<backend> compute_;
};

}  // namespace flashsinkhorn::detail
