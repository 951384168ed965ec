// The Sinkhorn loops, written once against the backend contract (backend.hpp).
//
// alternating (POT/OTT):  per iteration  f ← κ_x·T_f(g),  g ← κ_y·T_g(f)    κ = (1 + ε/ρ)⁻¹
// symmetric (GeomLoss sinkhorn_loop):   init f ← κT_f(0), g ← κT_g(0) at ε₀; per iteration
//                         f, g ← ½(f + κT_f(g)), ½(g + κT_g(f)) simultaneously; a final full step
//                         f, g ← κT_f(g), κT_g(f) ("extrapolation").
// With ε-scaling the first iterations walk the ε schedule, one iteration per value; then up to
// max_iterations more at the target ε until the marginal error ≤ tolerance (checked every
// check_every iterations — the only device→host reads of the loop, but for a progress callback's: it
// also gets every check_every-th stage of the schedule, whose error is then read). Those iterations
// run in blocks of check_every through backend::run_block (on CUDA: one graph launch per block).
// Debiasing runs the symmetric problems OT(a,a), OT(b,b) alongside with averaged updates
// f_aa ← ½(f_aa + κT_aa(f_aa)).
// Over-relaxation (alternating only, options::relaxation): the iterations at the target ε run
//   f ← (1 − ω)·f + ω·κT_f(g),   g ← (1 − ω)·g + ω·κT_g(f)        (softmin_step::blend = ω)
// except the f-update of each checked iteration (the last of a block), which stays plain (blend 1):
// its rows are then exact, so the g-update's error term is the L1 marginal error of the plan
// (f, g_old), exactly as without relaxation (backend.hpp: the error term compares previous with the
// un-blended new value; blend only changes what is written). The schedule's iterations are plain.
// When the last block ran relaxed, one plain g-update follows it (g ← κT_g(f)): the returned pair is
// then a Sinkhorn pair like the plain loop's (columns exact, rows off by about the reported error),
// not (f, blended g), whose columns a blend with ω ≈ 2 leaves off by up to the reported error again
// (the suite's float64 evaluator read 1.5e-4 for a reported 9.3e-5 at d = 64, before this step).
// Safeguard (global convergence is not guaranteed for ω > 1): once a check's marginal error exceeds
// the smallest of the earlier checks (at the target ε) by more than 1% (relaxation_control.hpp:
// kErrorRiseMargin, the readings' noise on a plateau), ω = 1 for the rest of the solve
// (loop_outcome::relaxation_fell_back). With adaptive_relaxation ω is re-estimated at every check
// from the error's rate (relaxation_control.hpp), and a rise halves ω − 1.
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "core/backend.hpp"
#include "flashsinkhorn/options.hpp"

namespace flashsinkhorn::detail {

struct loop_config {
  solver_kind solver = solver_kind::alternating;
  std::vector<double> schedule;  // ε values of the annealing phase; empty: none
  double eps = 1;                // target ε
  int max_iterations = 0;        // after the schedule
  double tolerance = 0;
  int check_every = 1;
  double relaxation = 1;  // ω in (0, 2), alternating only; 1: plain Sinkhorn
  bool adaptive_relaxation = false;  // ω starts at `relaxation`, then follows the error's rate
  std::optional<double> rho_x, rho_y;  // ρ = reach² per side
  bool debias = false;
  bool warm_start = false;  // potentials already hold a starting point
  std::function<void(const progress&)> on_progress;
};

struct loop_outcome {
  int iterations = 0;
  double marginal_error = 0;
  bool converged = false;
  bool relaxation_fell_back = false;  // the safeguard lowered ω at some check
  double seconds = 0;
};

loop_outcome run_sinkhorn_loop(backend& compute, const loop_config& config);

}  // namespace flashsinkhorn::detail
