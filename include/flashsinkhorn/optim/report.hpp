// What the iterative optimisers (Newton-CG, trust region, Adam) report: one record per iteration, a
// final status, the counts of the callbacks they made.
#pragma once

#include <functional>
#include <string_view>
#include <vector>

namespace flashsinkhorn::optim {

enum class optimizer_status {
  converged,               // ‖∇f(θ)‖₂ ≤ gradient_tolerance
  max_iterations,          // the iteration budget ran out first
  line_search_failed,      // Newton-CG: no Armijo step in max_backtracks halvings
  trust_radius_too_small,  // trust region: Δ < min_radius (the model cannot predict f at any scale)
  time_limit,              // the wall-time budget (the options' max_seconds) ran out first
  stopped,                 // a callback threw stop_requested (objective.hpp): the iteration in flight was dropped
};

[[nodiscard]] std::string_view to_string(optimizer_status status) noexcept;

// One iteration. Fields a method does not have keep their defaults (0, false).
struct optimizer_iteration {
  int iteration = 0;           // 1-based: the record of the step from θ_{k−1} to θ_k
  double value = 0;            // f(θ_k) after the step (unchanged when a trust-region step is rejected)
  double gradient_norm = 0;    // ‖∇f(θ_k)‖₂
  int cg_iterations = 0;       // inner CG iterations (Hessian-vector products) of this step
  double step_size = 0;        // Newton-CG: the Armijo α; trust region: 1 if accepted else 0; Adam: lr
  double step_norm = 0;        // ‖θ_k − θ_{k−1}‖₂ (0 for a rejected step)
  bool negative_curvature = false;  // the inner CG met dᵀHd ≤ 0
  double forcing = 0;          // η_k: the inner CG stopped at ‖Hs + g‖ ≤ η_k‖g‖
  double trust_radius = 0;     // trust region: Δ used for this step
  double reduction_ratio = 0;  // trust region: ρ = (f(θ) − f(θ + s)) / (m(0) − m(s))
  bool accepted = true;        // trust region: ρ > acceptance_ratio
};

using iteration_callback = std::function<void(const optimizer_iteration&)>;

struct evaluation_counts {
  int values = 0;     // calls of objective.value
  int gradients = 0;  // calls of objective.gradient
  int hvps = 0;       // calls of objective.hvp
};

struct optimizer_result {
  std::vector<double> theta;  // the last accepted iterate
  double value = 0;           // f(theta)
  double gradient_norm = 0;   // ‖∇f(theta)‖₂
  int iterations = 0;         // outer iterations made (rejected trust-region steps included)
  optimizer_status status = optimizer_status::max_iterations;
  std::vector<optimizer_iteration> history;
  evaluation_counts evaluations;
  double trust_radius = 0;    // trust region: Δ for the next iteration (a continuation's initial_radius)
};

}  // namespace flashsinkhorn::optim
