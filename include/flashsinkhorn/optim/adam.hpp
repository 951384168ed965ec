// Adam (Kingma & Ba, 2015), the first-order optimiser of the hybrid (SPEC §4). Per step k ≥ 1:
//   m ← β₁m + (1−β₁)g,  v ← β₂v + (1−β₂)g⊙g,
//   θ ← θ − lr·m̂/(√v̂ + ε),  m̂ = m/(1−β₁^k), v̂ = v/(1−β₂^k).
// Its steps have length ≈ lr per coordinate whatever ‖g‖ is, which is what carries it away from a
// saddle where Newton's step would stall.
#pragma once

#include <limits>
#include <vector>

#include "flashsinkhorn/optim/objective.hpp"
#include "flashsinkhorn/optim/report.hpp"

namespace flashsinkhorn::optim {

struct adam_options {
  double learning_rate = 1e-3;        // > 0
  double beta1 = 0.9;                 // ∈ [0, 1)
  double beta2 = 0.999;               // ∈ [0, 1)
  double epsilon = 1e-8;              // > 0
  double gradient_tolerance = 1e-8;   // stop at ‖∇f‖₂ ≤ this; > 0
  int max_iterations = 1000;          // steps; ≥ 1
  double max_seconds = std::numeric_limits<double>::infinity();  // wall-time budget; > 0 (+∞: none)
  iteration_callback on_iteration;    // called after every step; may be empty
};

// Minimises f from theta0 with Adam. Only objective.gradient is used. Throws invalid_argument for bad
// options, a missing gradient, or ∇f not finite at theta0.
[[nodiscard]] optimizer_result adam(const objective& f, std::vector<double> theta0, const adam_options& options = {});

}  // namespace flashsinkhorn::optim
