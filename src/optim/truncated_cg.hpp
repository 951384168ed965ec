// The inner solver of Newton-CG (Nocedal & Wright Alg. 7.1, the "for j" loop): CG on H s = −g from
// s = 0, stopped at ‖H s + g‖ ≤ η‖g‖, after max_iterations, or at the first direction d with
// dᵀHd ≤ 0, where `policy` (newton_cg.hpp) decides the step.
//
// Contract: every returned s ≠ 0 (for g ≠ 0) satisfies gᵀs ≤ 0 — CG iterates from 0 are descent
// directions of the quadratic model, −g is one, and the curvature direction is oriented.
#pragma once

#include "flashsinkhorn/optim/newton_cg.hpp"
#include "optim/cg_recurrence.hpp"

namespace flashsinkhorn::optim::detail {

struct truncated_cg_outcome {
  int iterations = 0;               // Hessian-vector products made
  bool negative_curvature = false;  // ended on dᵀHd ≤ 0
};

// step: output, p values.
truncated_cg_outcome truncated_cg(const hessian_product& hessian, const_span gradient, double eta, int max_iterations,
                                  negative_curvature_step policy, mutable_span step);

}  // namespace flashsinkhorn::optim::detail
