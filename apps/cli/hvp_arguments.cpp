#include "hvp_arguments.hpp"

#include "bad_input.hpp"
#include "option_names.hpp"

namespace flashsinkhorn::cli {
namespace {

// "<flag>: '<text>' is not one of <choices>"
bad_input not_one_of(std::string_view flag, std::string_view text, std::string_view choices) {
  std::string message(flag);
  message.append(": '").append(text).append("' is not one of ").append(choices);
  return bad_input(message);
}

hvp_part parse_part(std::string_view text) {
  if (text == "full") return hvp_part::full;
  if (text == "fixed") return hvp_part::fixed_potential;
  if (text == "implicit") return hvp_part::implicit;
  throw not_one_of("--part", text, "full, fixed, implicit");
}

two_gemm_path parse_two_gemm(std::string_view text) {
  if (text == "fused") return two_gemm_path::fused;
  if (text == "generic") return two_gemm_path::plan_pass;
  throw not_one_of("--two-gemm", text, "fused, generic");
}

cg_preconditioner parse_preconditioner(std::string_view text) {
  if (text == "diagonal") return cg_preconditioner::diagonal;
  if (text == "none") return cg_preconditioner::none;
  if (text == "sparse") return cg_preconditioner::sparse_plan;
  throw not_one_of("--preconditioner", text, "diagonal, none, sparse");
}

hvp_wrt parse_wrt(std::string_view text) {
  if (text == "x") return hvp_wrt::x;
  if (text == "y") return hvp_wrt::y;
  if (text == "xy") return hvp_wrt::xy;
  if (text == "self") return hvp_wrt::self;
  throw not_one_of("--wrt", text, "x, y, xy, self");
}

std::vector<flag_spec> hvp_flags(hvp_arguments& a) {
  options& o = a.solve_options;
  hvp_options& h = a.settings;
  std::vector<flag_spec> specs;
  add_point_file_flags(specs, a.files);
  specs.insert(specs.end(), {
      {"--dir", "FILE", "the direction: (n, d), or (m, d) with --wrt y (required)",
       [&a](std::string_view v) { a.direction_path = v; }},
      {"--dir-y", "FILE", "with --wrt xy: the direction of Y, (m, d) (default: zero)",
       [&a](std::string_view v) { a.direction_y_path = v; }},
      {"--wrt", "SIDE", "x (default): w.r.t. the points of X; y: of Y; xy: both (the joint product,\n"
                        "hvp_x.npy and hvp_y.npy); self: X = Y moving together (a symmetric problem)",
       [&a](std::string_view v) { a.wrt = parse_wrt(v); }},
  });
  add_eps_flags(specs, a.files);
  specs.insert(specs.end(), {
      {"--solver", "K", "alternating (default) or symmetric", [&o](std::string_view v) { o.solver = parse_solver_kind(v); }},
      {"--iters", "N", "maximum Sinkhorn iterations (default 1000)",
       [&o](std::string_view v) { o.max_iterations = parse_int("--iters", v, 0); }},
      {"--tol", "T", "solve until the L1 marginal error <= T (default 1e-6: the HVP is exact at convergence)",
       [&o](std::string_view v) { o.tolerance = parse_finite_double("--tol", v); }},
      {"--scaling", "R", "eps-scaling ratio in (0, 1) (default: off)",
       [&o](std::string_view v) { o.scaling = parse_finite_double("--scaling", v); }},
      {"--part", "P", "full (default), fixed (frozen potentials, indefinite) or implicit (PSD)",
       [&h](std::string_view v) { h.part = parse_part(v); }},
      {"--cg-tol", "T", "relative residual of the potentials' CG solve (default 1e-6)",
       [&h](std::string_view v) { h.tolerance = parse_finite_double("--cg-tol", v); }},
      {"--cg-iters", "N", "CG iteration cap (default 500)",
       [&h](std::string_view v) { h.max_iterations = parse_int("--cg-iters", v, 1); }},
      {"--preconditioner", "K", "diagonal (default), none, or sparse: the Schur complement of the plan's 8 largest entries per row, few CG iterations at small eps (S_k solved by an inner CG, on the GPU with --device cuda)", [&h](std::string_view v) { h.preconditioner = parse_preconditioner(v); }},
      {"--cg-ridge", "R", "damp the CG system, S + R*diag(P^T 1) (default 0: exact; R > 0 is faster on sharp\n"
                          "plans but biased, like flash-sinkhorn's tau2 and OTT-JAX's ridge)",
       [&h](std::string_view v) { h.ridge = parse_finite_double("--cg-ridge", v); }},
      {"--two-gemm", "K", "fused (default: the backend's pass) or generic (d^2 values)",
       [&h](std::string_view v) { h.two_gemm = parse_two_gemm(v); }},
      {"--repeat", "N", "timing: compute the product N more times; hvp_seconds is then their median and\n"
                        "hvp_first_seconds the first call's (default 0)",
       [&a](std::string_view v) { a.repeat = parse_int("--repeat", v, 0); }},
      {"--out", "DIR", "write hvp.npy and hvp.json into DIR (created if missing; required)",
       [&a](std::string_view v) { a.out_dir = std::string(v); }},
  });
  add_run_flags(specs, a.run);
  return specs;
}

}  // namespace

hvp_arguments parse_hvp_arguments(std::span<const std::string> args) {
  hvp_arguments arguments;
  arguments.solve_options.tolerance = 1e-6;
  parse_flags(args, hvp_flags(arguments), [](const std::string& value) {
    std::string message = "unexpected argument '";
    message.append(value).append("' (hvp takes --x, --y, --dir as flags)");
    throw bad_input(message);
  });
  const hvp_arguments& a = arguments;
  if (a.run.help) return arguments;
  require_point_files(a.files);
  if (a.direction_path.empty()) throw bad_input("missing required option --dir (the direction file)");
  if (!a.direction_y_path.empty() && a.wrt != hvp_wrt::xy)
    throw bad_input("--dir-y is the Y direction of --wrt xy; the other products take --dir only");
  require_eps(a.files);
  if (a.out_dir.empty()) throw bad_input("missing required option --out (the directory for hvp.npy)");
  // Checked here so that a bad setting is reported before the solve, not after it.
  if (a.settings.tolerance < 0) throw bad_input("--cg-tol must be >= 0 (a relative residual)");
  if (a.settings.ridge < 0) throw bad_input("--cg-ridge must be >= 0");
  return arguments;
}

std::string hvp_usage() {
  hvp_arguments unused;
  std::string text =
      "usage: flashsinkhorn hvp --x X.npy --y Y.npy --dir A.npy --eps E --out DIR [options]\n\n"
      "Solves entropic OT, then writes the exact Hessian-vector product H*A of the converged cost\n"
      "with respect to the points of X (or Y with --wrt y, both with --wrt xy), streamed (no n x m\n"
      "matrix). Prints progress on stderr and one JSON object on stdout.\n\noptions:\n";
  text.append(describe_flags(hvp_flags(unused)));
  text.append(
      "\nDIR receives hvp.npy (the product, shape of the direction; float64 with --precision fp64,\n"
      "float32 otherwise; --wrt xy: hvp_x.npy and hvp_y.npy) and hvp.json (the printed summary: CG\n"
      "iterations, residual, plan passes), all or nothing. Balanced problems with the\n"
      "squared-Euclidean cost only.\n"
      "\nexample:\n"
      "  flashsinkhorn hvp --x X.npy --y Y.npy --dir A.npy --eps 0.1 --precision fp64 --out result\n");
  return text;
}

std::string name_of(hvp_part part) {
  switch (part) {
    case hvp_part::full: return "full";
    case hvp_part::fixed_potential: return "fixed";
    case hvp_part::implicit: return "implicit";
  }
  return "?";
}

std::string name_of(two_gemm_path path) { return path == two_gemm_path::fused ? "fused" : "generic"; }

std::string name_of(hvp_wrt wrt) {
  switch (wrt) {
    case hvp_wrt::x: return "x";
    case hvp_wrt::y: return "y";
    case hvp_wrt::xy: return "xy";
    case hvp_wrt::self: return "self";
  }
  return "?";
}

std::string name_of(cg_preconditioner preconditioner) {
  switch (preconditioner) {
    case cg_preconditioner::diagonal: return "diagonal";
    case cg_preconditioner::sparse_plan: return "sparse";
    case cg_preconditioner::none: break;
  }
  return "none";
}

}  // namespace flashsinkhorn::cli
