// `flashsinkhorn hvp`: load the clouds, weights and direction, solve, write H·A atomically, print
// the JSON summary (also stored as DIR/hvp.json).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "array_file.hpp"
#include "atomic_output.hpp"
#include "bad_input.hpp"
#include "commands.hpp"
#include "flashsinkhorn/error.hpp"
#include "flashsinkhorn/solver.hpp"
#include "hvp_arguments.hpp"
#include "json_object.hpp"
#include "npy.hpp"
#include "option_names.hpp"
#include "problem_files.hpp"
#include "progress_reporter.hpp"
#include "solve_session.hpp"

namespace flashsinkhorn::cli {
namespace {

json_object describe(const problem& p, const hvp_arguments& arguments, const options& o, const result& r,
                     const hvp_report& report, double hvp_seconds) {
  json_object json;
  json.add("cost", r.cost);
  add_solve_summary(json, p, r);
  json.add("cost_scale", p.cost_scale);
  json.add("wrt", arguments.wrt_y ? "y" : "x");
  json.add("part", name_of(arguments.settings.part));
  json.add("two_gemm", name_of(arguments.settings.two_gemm));
  json.add("cg_iterations", report.cg_iterations);
  json.add("cg_relative_residual", report.relative_residual);
  json.add("cg_converged", report.converged);
  json.add("cg_tolerance", arguments.settings.tolerance);
  json.add("cg_ridge", arguments.settings.ridge);
  json.add("cg_preconditioner", name_of(arguments.settings.preconditioner));
  json.add("plan_passes", report.plan_passes);
  json.add("gauge_defect", report.gauge_defect);
  json.add("device", r.device);
  json.add("precision", name_of(o.precision));
  json.add("solver", name_of(o.solver));
  json.add("solve_seconds", r.time.total_seconds);
  json.add("hvp_seconds", hvp_seconds);
  json.add("version", version());
  return json;
}

}  // namespace

void run_hvp_command(std::span<const std::string> args) {
  const hvp_arguments arguments = parse_hvp_arguments(args);
  if (printed_usage(arguments.run, hvp_usage)) return;
  const loaded_problem inputs(arguments.files);
  const problem& p = inputs.view;
  const loaded_array direction = load_array_file(arguments.direction_path);
  const matrix_view dir = points_view(direction, arguments.direction_path);
  const std::int64_t rows = arguments.wrt_y ? p.y.rows : p.x.rows;
  if (dir.rows != rows || dir.cols != p.x.cols) {
    std::string message = arguments.direction_path;
    message.append(": the direction is ").append(shape_string(direction.shape)).append(", expected (");
    message.append(std::to_string(rows)).append(", ").append(std::to_string(p.x.cols)).append(") — the shape of ");
    message.append(arguments.wrt_y ? "Y (--wrt y)" : "X (--wrt x)");
    throw bad_input(message);
  }

  options o = arguments.solve_options;
  apply_run_flags(arguments.run, o);
  progress_reporter reporter(arguments.run.quiet, o.tolerance);
  o.on_progress = [&reporter](const progress& step) { reporter.report(step); };
  solver s(p, o);  // validates the problem before --out is touched
  atomic_output output(arguments.out_dir);
  const result r = s.solve();

  std::vector<double> product(static_cast<std::size_t>(rows * p.x.cols));
  const mutable_matrix_view out = host_matrix(product.data(), rows, p.x.cols);
  hvp_report report;
  const auto timed_product = [&] {
    const auto start = std::chrono::steady_clock::now();
    report = arguments.wrt_y ? s.hvp_y(dir, out, arguments.settings) : s.hvp_x(dir, out, arguments.settings);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  const double first_seconds = timed_product();
  std::vector<double> repeats;
  for (int i = 0; i < arguments.repeat; ++i) repeats.push_back(timed_product());
  std::sort(repeats.begin(), repeats.end());
  const double hvp_seconds = repeats.empty() ? first_seconds : repeats[repeats.size() / 2];
  for (std::size_t i = 0; i < product.size(); ++i) {
    if (!std::isfinite(product[i])) {
      std::string message = "hvp.npy is not finite at flat index ";
      message.append(std::to_string(i)).append("; try a larger --eps or --precision fp64");
      throw std::runtime_error(message);
    }
  }
  if (!report.converged && !arguments.run.quiet) {
    std::fprintf(stderr, "flashsinkhorn: warning: CG stopped at relative residual %.3g > --cg-tol %.3g after %d iterations\n",
                 report.relative_residual, arguments.settings.tolerance, report.cg_iterations);
  }
  json_object json = describe(p, arguments, o, r, report, hvp_seconds);
  if (arguments.repeat > 0) {
    json.add("hvp_first_seconds", first_seconds);
    json.add("hvp_repeats", arguments.repeat);
  }
  json.add("out", output.directory().string());
  output.add("hvp.npy", encode_npy(product, {rows, p.x.cols}, output_dtype(o.precision)));
  output.add("hvp.json", json.str() + "\n");
  output.commit();
  std::printf("%s\n", json.str().c_str());
}

}  // namespace flashsinkhorn::cli
