// The arguments of `flashsinkhorn solve`.
#pragma once

#include <optional>
#include <span>
#include <string>

#include "flashsinkhorn/options.hpp"
#include "run_flags.hpp"

namespace flashsinkhorn::cli {

struct solve_arguments {
  std::string x_path;
  std::string y_path;
  std::optional<std::string> a_path;
  std::optional<std::string> b_path;
  double eps = 0;
  double cost_scale = 1.0;
  options solve_options;  // cost, solver, iterations, tolerance, scaling, reach, debias
  std::optional<std::string> out_dir;
  bool write_gradients = false;  // --grad: the gradient files too (needs --out)
  run_flags run;
};

// Throws bad_input on unknown flags, unparsable values, missing --x, --y or --eps, and --grad
// without --out (unless --help was given: then the result has run.help set and nothing else is
// required).
[[nodiscard]] solve_arguments parse_solve_arguments(std::span<const std::string> args);

[[nodiscard]] std::string solve_usage();

}  // namespace flashsinkhorn::cli
