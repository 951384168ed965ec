#include "solve_arguments.hpp"

#include "bad_input.hpp"
#include "option_names.hpp"

namespace flashsinkhorn::cli {
namespace {

std::vector<flag_spec> solve_flags(solve_arguments& a) {
  options& o = a.solve_options;
  std::vector<flag_spec> specs;
  add_point_file_flags(specs, a.files);
  add_eps_flags(specs, a.files);
  specs.insert(specs.end(), {
      {"--cost", "K", "sqeuclidean (default) or cosine", [&o](std::string_view v) { o.cost = parse_cost_kind(v); }},
      {"--solver", "K", "alternating (default) or symmetric (GeomLoss)",
       [&o](std::string_view v) { o.solver = parse_solver_kind(v); }},
      {"--iters", "N", "maximum iterations after the eps schedule (default 1000)",
       [&o](std::string_view v) { o.max_iterations = parse_int("--iters", v, 0); }},
      {"--tol", "T", "stop when the L1 marginal error <= T (default 1e-4; 0: run all iterations)",
       [&o](std::string_view v) { o.tolerance = parse_finite_double("--tol", v); }},
      {"--check-every", "K", "iterations between convergence checks (default 10)",
       [&o](std::string_view v) { o.check_every = parse_int("--check-every", v, 1); }},
      {"--relaxation", "W", "over-relaxation omega in (0, 2) at the target eps, alternating solver (default 1: plain); "
       "auto: adaptive from 1.8",
       [&o](std::string_view v) {
         o.adaptive_relaxation = v == "auto";
         o.relaxation = o.adaptive_relaxation ? options::auto_relaxation_start : parse_finite_double("--relaxation", v);
       }},
      {"--scaling", "R", "eps-scaling ratio in (0, 1): anneal eps from diam^2 (default: off)",
       [&o](std::string_view v) { o.scaling = parse_finite_double("--scaling", v); }},
      {"--reach", "R", "unbalanced OT on both sides, KL penalty rho = R^2",
       [&o](std::string_view v) { o.reach_x = o.reach_y = parse_finite_double("--reach", v); }},
      {"--reach-x", "R", "unbalanced on the side of X only", [&o](std::string_view v) { o.reach_x = parse_finite_double("--reach-x", v); }},
      {"--reach-y", "R", "unbalanced on the side of Y only", [&o](std::string_view v) { o.reach_y = parse_finite_double("--reach-y", v); }},
      {"--debias", "", "return the Sinkhorn divergence S_eps instead of OT_eps",
       [&o](std::string_view) { o.debias = true; }},
      {"--out", "DIR", "write f.npy, g.npy, transport_x.npy into DIR (created if missing)",
       [&a](std::string_view v) { a.out_dir = std::string(v); }},
      {"--grad", "", "also write the gradients of cost into DIR of --out (grad_*.npy; see below)",
       [&a](std::string_view) { a.write_gradients = true; }},
  });
  add_run_flags(specs, a.run);
  return specs;
}

}  // namespace

solve_arguments parse_solve_arguments(std::span<const std::string> args) {
  solve_arguments arguments;
  int positional_count = 0;
  parse_flags(args, solve_flags(arguments), [&](const std::string& value) {
    // `solve X Y` is accepted as a shorthand for `solve --x X --y Y`.
    std::string& target = positional_count == 0 ? arguments.files.x_path : arguments.files.y_path;
    if (positional_count >= 2 || !target.empty()) throw bad_input("unexpected argument '" + value + "'");
    target = value;
    ++positional_count;
  });
  if (arguments.run.help) return arguments;
  require_point_files(arguments.files);
  require_eps(arguments.files);
  if (arguments.write_gradients && !arguments.out_dir) {
    throw bad_input("--grad needs --out DIR: the gradients are written there as grad_x.npy, grad_y.npy, ...");
  }
  return arguments;
}

std::string solve_usage() {
  solve_arguments unused;
  std::string text =
      "usage: flashsinkhorn solve --x X.npy --y Y.npy --eps E [options]\n\n"
      "Solves entropic optimal transport between two point clouds. Prints progress on stderr\n"
      "and one JSON object on stdout.\n\noptions:\n";
  text.append(describe_flags(solve_flags(unused)));
  text.append(
      "\n--out DIR holds f.npy (n,), g.npy (m,) and transport_x.npy (n, d). With --grad also\n"
      "grad_x.npy (n, d) and grad_y.npy (m, d), the gradients of \"cost\" with respect to the points\n"
      "of X and Y, and grad_a.npy (n,), grad_b.npy (m,), with respect to the weights a, b, on each\n"
      "side without a reach (they account for the normalisation of the weights). Gradients are\n"
      "exact at convergence (envelope theorem). Every file is float64 with --precision fp64 and\n"
      "float32 otherwise. They are written all or nothing: after an error, none of them is.\n"
      "\nexample:\n"
      "  flashsinkhorn solve --x X.npy --y Y.npy --eps 0.1 --precision fp64 --out result --grad\n");
  return text;
}

}  // namespace flashsinkhorn::cli
