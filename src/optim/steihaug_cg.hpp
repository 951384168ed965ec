// The inner solver of the trust region (Nocedal & Wright Alg. 7.2, Steihaug–Toint CG): approximately
// minimise m(s) = gᵀs + ½sᵀHs over ‖s‖ ≤ Δ by CG from s = 0, stopped at ‖H s + g‖ ≤ η‖g‖ or after
// max_iterations; a direction with dᵀHd ≤ 0, or a CG step leaving the ball, ends at the boundary
// point s + τd, τ ≥ 0, ‖s + τd‖ = Δ. m decreases monotonically along the CG path, so m(s) < 0 for
// g ≠ 0.
#pragma once

#include "optim/truncated_cg.hpp"

namespace flashsinkhorn::optim::detail {

struct steihaug_outcome {
  int iterations = 0;               // Hessian-vector products made
  bool negative_curvature = false;  // met dᵀHd ≤ 0
  bool on_boundary = false;         // ‖s‖ = Δ
  double model_decrease = 0;        // m(0) − m(s) = −gᵀs − ½sᵀHs, from the tracked H s
};

// step: output, p values.
steihaug_outcome steihaug_cg(const hessian_product& hessian, const_span gradient, double radius, double eta,
                             int max_iterations, mutable_span step);

}  // namespace flashsinkhorn::optim::detail
