#include "solve_arguments.hpp"

#include "bad_input.hpp"
#include "option_names.hpp"

namespace flashsinkhorn::cli {
namespace {

struct solve_parse_state {
  solve_arguments arguments;
  bool has_eps = false;
};

std::vector<flag_spec> solve_flags(solve_parse_state& state) {
  solve_arguments& a = state.arguments;
  options& o = a.solve_options;
  std::vector<flag_spec> specs = {
      {"--x", "FILE", "source points (n, d): .npy, .npz or .csv", [&a](std::string_view v) { a.x_path = v; }},
      {"--y", "FILE", "target points (m, d)", [&a](std::string_view v) { a.y_path = v; }},
      {"--a", "FILE", "source weights (n,) (default: uniform)", [&a](std::string_view v) { a.a_path = std::string(v); }},
      {"--b", "FILE", "target weights (m,) (default: uniform)", [&a](std::string_view v) { a.b_path = std::string(v); }},
      {"--eps", "E", "entropic temperature eps > 0 (required)",
       [&state](std::string_view v) {
         state.arguments.eps = parse_finite_double("--eps", v);
         state.has_eps = true;
       }},
      {"--cost-scale", "S", "s in C = s*|x-y|^2 (default 1; 0.5 is GeomLoss's convention)",
       [&a](std::string_view v) { a.cost_scale = parse_finite_double("--cost-scale", v); }},
      {"--cost", "K", "sqeuclidean (default) or cosine", [&o](std::string_view v) { o.cost = parse_cost_kind(v); }},
      {"--solver", "K", "alternating (default) or symmetric (GeomLoss)",
       [&o](std::string_view v) { o.solver = parse_solver_kind(v); }},
      {"--iters", "N", "maximum iterations after the eps schedule (default 1000)",
       [&o](std::string_view v) { o.max_iterations = parse_int("--iters", v, 0); }},
      {"--tol", "T", "stop when the L1 marginal error <= T (default 1e-4; 0: run all iterations)",
       [&o](std::string_view v) { o.tolerance = parse_finite_double("--tol", v); }},
      {"--check-every", "K", "iterations between convergence checks (default 10)",
       [&o](std::string_view v) { o.check_every = parse_int("--check-every", v, 1); }},
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
  };
  add_run_flags(specs, a.run);
  return specs;
}

}  // namespace

solve_arguments parse_solve_arguments(std::span<const std::string> args) {
  solve_parse_state state;
  int positional_count = 0;
  parse_flags(args, solve_flags(state), [&](const std::string& value) {
    // `solve X Y` is accepted as a shorthand for `solve --x X --y Y`.
    std::string& target = positional_count == 0 ? state.arguments.x_path : state.arguments.y_path;
    if (positional_count >= 2 || !target.empty()) throw bad_input("unexpected argument '" + value + "'");
    target = value;
    ++positional_count;
  });
  const solve_arguments& a = state.arguments;
  if (a.run.help) return state.arguments;
  if (a.x_path.empty()) throw bad_input("missing required option --x (the source points file)");
  if (a.y_path.empty()) throw bad_input("missing required option --y (the target points file)");
  if (!state.has_eps) throw bad_input("missing required option --eps (the entropic temperature)");
  if (a.write_gradients && !a.out_dir) {
    throw bad_input("--grad needs --out DIR: the gradients are written there as grad_x.npy, grad_y.npy, ...");
  }
  return state.arguments;
}

std::string solve_usage() {
  solve_parse_state unused;
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
