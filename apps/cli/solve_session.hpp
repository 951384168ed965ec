// What `solve` and `demo` share: validate and prepare the problem (library), make sure --out is
// usable, solve with progress on stderr, write the solution files atomically, and describe the
// run as the JSON object the command prints.
#pragma once

#include <optional>
#include <string>

#include "flashsinkhorn/options.hpp"
#include "flashsinkhorn/problem.hpp"
#include "flashsinkhorn/result.hpp"
#include "json_object.hpp"
#include "run_flags.hpp"

namespace flashsinkhorn::cli {

// Where the solution goes: nowhere without a directory; f, g and transport_x with one, and the
// gradient files as well when `gradients` (solution_files.hpp).
struct output_request {
  std::optional<std::string> directory;
  bool gradients = false;
};

// Keys: cost, primal_cost, relative_entropy, iterations, marginal_error, converged, n, m, d, eps,
// device, seconds, prepare_seconds, solve_seconds, solver, precision, cost_kind, cost_scale, debias,
// tolerance, max_iterations, scaling, reach_x, reach_y, version, primal_seconds (the pass after the
// loop that gives primal_cost and relative_entropy; in seconds, not in solve_seconds), and out when
// `request.directory` is set.
// Errors: the library's exceptions; bad_input for an unusable --out (before solving);
// std::runtime_error when a result is not finite or a file cannot be written (nothing is left
// behind in the directory then).
// The keys every command that solves reports, in this order: iterations, marginal_error,
// converged, n, m, d, eps.
void add_solve_summary(json_object& json, const problem& p, const result& r);

[[nodiscard]] json_object solve_and_describe(const problem& p, options o, const run_flags& run,
                                             const output_request& request);

}  // namespace flashsinkhorn::cli
