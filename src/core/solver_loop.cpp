#include "core/solver_loop.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "core/relaxation_control.hpp"

namespace flashsinkhorn::detail {
namespace {

double damping(double eps, const std::optional<double>& rho) { return rho ? 1.0 / (1.0 + eps / *rho) : 1.0; }

// One softmin update of `out` on side `rows` from the potential `key_potential` on side `keys`.
softmin_step half_step(side rows, side keys, std::optional<slot> key_potential, slot previous, slot out,
                       double eps, double kappa, double blend, bool error) {
  softmin_step step;
  step.rows = rows;
  step.keys = keys;
  step.key_potential = key_potential;
  step.previous = previous;
  step.out = out;
  step.eps = eps;
  step.damping = kappa;
  step.blend = blend;
  step.accumulate_error = error;
  return step;
}

class loop_runner {
 public:
  loop_runner(backend& compute, const loop_config& config)
      : compute_(compute), config_(config), start_(std::chrono::steady_clock::now()) {}

  loop_outcome run() {
    const bool symmetric = config_.solver == solver_kind::symmetric;
    const double eps0 = config_.schedule.empty() ? config_.eps : config_.schedule.front();
    if (!config_.warm_start) initialise(eps0, symmetric);

    int done = 0;
    const int total = static_cast<int>(config_.schedule.size()) + config_.max_iterations;
    for (double eps : config_.schedule) {
      const bool last = ++done == total;
      // With a progress callback every check_every-th stage also measures its marginal error (at
      // that stage's ε; a read, where a GPU waits) and reports it. The numbers are those of a run
      // without the callback: a checked stage changes nothing else (ω = 1 in the schedule).
      const bool reported = !last && config_.on_progress && done % config_.check_every == 0;
      iterate(eps, symmetric, last || reported, 1);
      if (last) outcome_.marginal_error = compute_.take_error();
      if (reported) report(done, total, false, eps, compute_.take_error());
    }
    relaxation_control relaxation(config_.relaxation, config_.adaptive_relaxation);
    // At the target ε: blocks of check_every iterations (the last one shorter), each followed by
    // the convergence read. A block is the same sequence of steps every time (only its last
    // iteration accumulates the error and, when relaxed, has a plain f-update; the safeguard and the
    // adaptive ω change ω a few times), which is what lets the backend replay it (run_block).
    double last_omega = 1;
    for (int k = 0; k < config_.max_iterations;) {
      const int count = std::min(config_.check_every, config_.max_iterations - k);
      const double omega = last_omega = relaxation.omega();
      compute_.run_block(count, [&](int i) { iterate(config_.eps, symmetric, i + 1 == count, omega); });
      k += count;
      done += count;
      outcome_.marginal_error = compute_.take_error();
      relaxation.observe(outcome_.marginal_error, count);  // the safeguard, and the adaptive ω
      outcome_.relaxation_fell_back = relaxation.fell_back();
      outcome_.converged = config_.tolerance > 0 && outcome_.marginal_error <= config_.tolerance;
      if (outcome_.converged) break;
      // (the last check's report is the final one, below)
      if (k < config_.max_iterations) report(done, total, false, config_.eps, outcome_.marginal_error);
    }
    if (symmetric) extrapolate(config_.eps);
    if (!symmetric && last_omega != 1) plain_g_update(config_.eps);
    outcome_.iterations = done;
    outcome_.seconds = elapsed();
    report(done, total, true, config_.eps, outcome_.marginal_error);
    return outcome_;
  }

 private:
  double kx(double eps) const { return damping(eps, config_.rho_x); }
  double ky(double eps) const { return damping(eps, config_.rho_y); }

  // Cold start: alternating starts from g = 0 (its first iteration sets f = T_f(0));
  // symmetric starts like GeomLoss, from the softmins of zero potentials at ε₀.
  void initialise(double eps0, bool symmetric) {
    if (symmetric) {
      compute_.softmin(half_step(side::x, side::y, std::nullopt, slot::f, slot::f, eps0, kx(eps0), 1, false));
      compute_.softmin(half_step(side::y, side::x, std::nullopt, slot::g, slot::g, eps0, ky(eps0), 1, false));
    } else {
      compute_.write_potential(slot::f, std::vector<double>());  // empty = zeros
      compute_.write_potential(slot::g, std::vector<double>());
    }
    if (config_.debias) {
      compute_.softmin(half_step(side::x, side::x, std::nullopt, slot::f_aa, slot::f_aa, eps0, kx(eps0), 1, false));
      compute_.softmin(half_step(side::y, side::y, std::nullopt, slot::g_bb, slot::g_bb, eps0, ky(eps0), 1, false));
    }
  }

  // ω = `relaxation` (1 in the schedule and for the symmetric solver; see solver_loop.hpp).
  void iterate(double eps, bool symmetric, bool check, double relaxation) {
    if (symmetric) {
      // f_next ← ½(f + κT_f(g)), g_next ← ½(g + κT_g(f)) from the same old (f, g). The error terms
      // add the row and the column L1 marginal errors of the old plan.
      compute_.softmin(half_step(side::x, side::y, slot::g, slot::f, slot::f_next, eps, kx(eps), 0.5, check));
      compute_.softmin(half_step(side::y, side::x, slot::f, slot::g, slot::g_next, eps, ky(eps), 0.5, check));
      compute_.swap_potentials(slot::f, slot::f_next);
      compute_.swap_potentials(slot::g, slot::g_next);
    } else {
      // f ← (1 − ω)f + ωκT_f(g); then g ← (1 − ω)g + ωκT_g(f) whose error term is the column
      // marginal error of (f, g_old). On a checked iteration the f-update is plain (ω = 1), so the
      // plan's rows are exact and that term is the plan's whole L1 marginal error.
      const double f_blend = check ? 1.0 : relaxation;
      compute_.softmin(half_step(side::x, side::y, slot::g, slot::f, slot::f, eps, kx(eps), f_blend, false));
      compute_.softmin(half_step(side::y, side::x, slot::f, slot::g, slot::g, eps, ky(eps), relaxation, check));
    }
    if (config_.debias) {
      compute_.softmin(half_step(side::x, side::x, slot::f_aa, slot::f_aa, slot::f_aa_next, eps, kx(eps), 0.5, check));
      compute_.softmin(half_step(side::y, side::y, slot::g_bb, slot::g_bb, slot::g_bb_next, eps, ky(eps), 0.5, check));
      compute_.swap_potentials(slot::f_aa, slot::f_aa_next);
      compute_.swap_potentials(slot::g_bb, slot::g_bb_next);
    }
  }

  // g ← κT_g(f) after a relaxed last block (solver_loop.hpp): the blended g replaced by the plain one.
  void plain_g_update(double eps) {
    compute_.softmin(half_step(side::y, side::x, slot::f, slot::g, slot::g, eps, ky(eps), 1, false));
  }

  void extrapolate(double eps) {
    compute_.softmin(half_step(side::x, side::y, slot::g, slot::f, slot::f_next, eps, kx(eps), 1, false));
    compute_.softmin(half_step(side::y, side::x, slot::f, slot::g, slot::g_next, eps, ky(eps), 1, false));
    compute_.swap_potentials(slot::f, slot::f_next);
    compute_.swap_potentials(slot::g, slot::g_next);
    if (config_.debias) {
      compute_.softmin(half_step(side::x, side::x, slot::f_aa, slot::f_aa, slot::f_aa_next, eps, kx(eps), 1, false));
      compute_.softmin(half_step(side::y, side::y, slot::g_bb, slot::g_bb, slot::g_bb_next, eps, ky(eps), 1, false));
      compute_.swap_potentials(slot::f_aa, slot::f_aa_next);
      compute_.swap_potentials(slot::g_bb, slot::g_bb_next);
    }
  }

  void report(int iteration, int total, bool finished, double eps, double marginal_error) const {
    if (!config_.on_progress) return;
    progress p;
    p.iteration = iteration;
    p.max_iterations = total;
    p.eps = eps;
    p.marginal_error = marginal_error;
    p.elapsed_seconds = elapsed();
    p.finished = finished;
    config_.on_progress(p);
  }

  double elapsed() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

  backend& compute_;
  const loop_config& config_;
  std::chrono::steady_clock::time_point start_;
  loop_outcome outcome_;
};

}  // namespace

loop_outcome run_sinkhorn_loop(backend& compute, const loop_config& config) {
  return loop_runner(compute, config).run();
}

}  // namespace flashsinkhorn::detail
