// The arguments of `flashsinkhorn solve`.
#pragma once

#include <optional>
#include <span>
#include <string>

#include "flashsinkhorn/options.hpp"
#include "problem_files.hpp"
#include "run_flags.hpp"

namespace flashsinkhorn::cli {

struct solve_arguments {
  problem_files files;  // --x, --y, --a, --b, --eps, --cost-scale
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
