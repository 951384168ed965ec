#include "solve_session.hpp"

#include <chrono>
#include <memory>

#include "atomic_output.hpp"
#include "flashsinkhorn/solver.hpp"
#include "option_names.hpp"
#include "peak_rss.hpp"
#include "progress_reporter.hpp"
#include "solution_files.hpp"

namespace flashsinkhorn::cli {
namespace {

void add_optional(json_object& json, std::string_view key, const std::optional<double>& value) {
  if (value) {
    json.add(key, *value);
  } else {
    json.add_null(key);
  }
}

json_object describe(const problem& p, const options& o, const result& r) {
  json_object json;
  json.add("cost", r.cost);
  json.add("primal_cost", r.primal_cost);
  json.add("relative_entropy", r.relative_entropy);
  add_solve_summary(json, p, r);
  json.add("device", r.device);
  json.add("seconds", r.time.total_seconds);
  json.add("prepare_seconds", r.time.prepare_seconds);
  json.add("solve_seconds", r.time.solve_seconds);
  if (const std::optional<std::int64_t> peak = peak_resident_bytes()) {  // this program's own, so far
    json.add("peak_host_rss_bytes", *peak);
  } else {
    json.add_null("peak_host_rss_bytes");
  }
  json.add("solver", name_of(o.solver));
  json.add("precision", name_of(o.precision));
  json.add("cost_kind", name_of(o.cost));
  json.add("cost_scale", p.cost_scale);
  json.add("debias", o.debias);
  json.add("tolerance", o.tolerance);
  json.add("max_iterations", o.max_iterations);
  add_optional(json, "scaling", o.scaling);
  add_optional(json, "reach_x", o.reach_x);
  add_optional(json, "reach_y", o.reach_y);
  if (o.relaxation != 1) {  // keys only with --relaxation: the default JSON is unchanged
    json.add("relaxation", o.relaxation);
    json.add("adaptive_relaxation", o.adaptive_relaxation);
    json.add("relaxation_fell_back", r.relaxation_fell_back);
  }
  json.add("version", version());
  return json;
}

}  // namespace

void add_solve_summary(json_object& json, const problem& p, const result& r) {
  json.add("iterations", r.iterations);
  json.add("marginal_error", r.marginal_error);
  json.add("converged", r.converged);
  json.add("n", p.x.rows);
  json.add("m", p.y.rows);
  json.add("d", p.x.cols);
  json.add("eps", r.eps);
}

json_object solve_and_describe(const problem& p, options o, const run_flags& run, const output_request& request) {
  progress_reporter reporter(run.quiet, o.tolerance);
  o.on_progress = [&reporter](const progress& step) { reporter.report(step); };
  o.primal_terms = false;
  solver s(p, o);  // validates the problem: bad input is reported before --out is touched

  std::unique_ptr<atomic_output> output;
  if (request.directory) output = std::make_unique<atomic_output>(*request.directory);

  result r = s.solve();
  // The primal terms after the loop, timed apart (o.primal_terms is off): solve_seconds is the
  // loop alone, as a peer's forward time is.
  const auto primal_start = std::chrono::steady_clock::now();
  const objective_terms terms = s.primal_objective();
  const double primal_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - primal_start).count();
  r.primal_cost = terms.primal_cost;
  r.relative_entropy = terms.relative_entropy;
  r.time.total_seconds += primal_seconds;
  json_object json = describe(p, o, r);
  json.add("primal_seconds", primal_seconds);
  if (output) {
    const dtype stored_as = output_dtype(o.precision);
    stage_solution_files(s, r, p.x.cols, stored_as, *output);
    if (request.gradients) stage_gradient_files(s, o, p.x.rows, p.y.rows, p.x.cols, stored_as, *output);
    output->commit();
    json.add("out", output->directory().string());
  }
  return json;
}

}  // namespace flashsinkhorn::cli
