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

// Adam's state after k steps: the moments m, v and k (the bias correction's exponent). A run started
// from it (adam_options::initial) continues the run that ended with it (adam_result::moments) as if
// it had not stopped — what a run cut by its wall-time budget needs to go on in another process.
struct adam_moments {
  std::vector<double> first;   // m (empty with `second`: a fresh start, m = v = 0, k = 0)
  std::vector<double> second;  // v, ≥ 0
  int steps = 0;               // k ≥ 0
};

struct adam_options {
  double learning_rate = 1e-3;        // > 0
  double beta1 = 0.9;                 // ∈ [0, 1)
  double beta2 = 0.999;               // ∈ [0, 1)
  double epsilon = 1e-8;              // > 0
  double gradient_tolerance = 1e-8;   // stop at ‖∇f‖₂ ≤ this; > 0
  int max_iterations = 1000;          // steps; ≥ 1
  double max_seconds = std::numeric_limits<double>::infinity();  // wall-time budget; > 0 (+∞: none)
  iteration_callback on_iteration;    // called after every step; may be empty
  // Resume from a previous run's moments (sizes p, or both empty). Step numbers continue from
  // initial.steps, and max_iterations bounds the steps of all the runs together.
  adam_moments initial;
};

// What adam returns: the report (iterations counts the resumed steps too; history holds this run's)
// and the moments to resume from.
struct adam_result : optimizer_result {
  adam_moments moments;
};

// Minimises f from theta0 with Adam. Only objective.gradient is used. Throws invalid_argument for bad
// options (initial moments of the wrong size or not finite included), a missing gradient, or ∇f not
// finite at theta0.
[[nodiscard]] adam_result adam(const objective& f, std::vector<double> theta0, const adam_options& options = {});

}  // namespace flashsinkhorn::optim
