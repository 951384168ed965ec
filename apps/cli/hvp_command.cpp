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
  json.add("wrt", name_of(arguments.wrt));
  json.add("part", name_of(arguments.settings.part));
  json.add("two_gemm", name_of(arguments.settings.two_gemm));
  json.add("cg_iterations", report.cg_iterations);
  json.add("cg_relative_residual", report.relative_residual);
  json.add("cg_converged", report.converged);
  json.add("cg_tolerance", arguments.settings.tolerance);
  json.add("cg_ridge", arguments.settings.ridge);
  json.add("cg_preconditioner", name_of(arguments.settings.preconditioner));
  json.add("plan_passes", report.plan_passes);
  json.add("redone_in_float64", report.redone_in_float64);
  json.add("gauge_defect", report.gauge_defect);
  json.add("device", r.device);
  json.add("precision", name_of(o.precision));
  json.add("solver", name_of(o.solver));
  json.add("solve_seconds", r.time.total_seconds);
  json.add("hvp_seconds", hvp_seconds);
  json.add("version", version());
  return json;
}

// A direction file as a view, its shape checked against `rows` × d ("the shape of <what>").
matrix_view direction_view(const loaded_array& file, const std::string& path, std::int64_t rows, std::int64_t cols,
                           const char* what) {
  const matrix_view view = points_view(file, path);
  if (view.rows != rows || view.cols != cols) {
    std::string message = path;
    message.append(": the direction is ").append(shape_string(file.shape)).append(", expected (");
    message.append(std::to_string(rows)).append(", ").append(std::to_string(cols)).append(") — the shape of ");
    message.append(what);
    throw bad_input(message);
  }
  return view;
}

// The product(s) of one call, by --wrt: x, y and self write `first` (the direction's shape); xy
// writes `first` (n, d) and `second` (m, d).
hvp_report compute_products(const solver& s, const hvp_arguments& arguments, const matrix_view& dir,
                            const matrix_view& dir_y, const mutable_matrix_view& first,
                            const mutable_matrix_view& second) {
  switch (arguments.wrt) {
    case hvp_wrt::x: return s.hvp_x(dir, first, arguments.settings);
    case hvp_wrt::y: return s.hvp_y(dir, first, arguments.settings);
    case hvp_wrt::xy: return s.hvp_xy(dir, dir_y, first, second, arguments.settings);
    case hvp_wrt::self: return s.hvp_self(dir, first, arguments.settings);
  }
  return {};
}

void require_finite(const std::vector<double>& values, const char* file) {
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (!std::isfinite(values[i])) {
      std::string message = std::string(file) + " is not finite at flat index ";
      message.append(std::to_string(i)).append("; try a larger --eps or --precision fp64");
      throw std::runtime_error(message);
    }
  }
}

}  // namespace

void run_hvp_command(std::span<const std::string> args) {
  const hvp_arguments arguments = parse_hvp_arguments(args);
  if (printed_usage(arguments.run, hvp_usage)) return;
  const loaded_problem inputs(arguments.files);
  const problem& p = inputs.view;
  const std::int64_t n = p.x.rows, m = p.y.rows, d = p.x.cols;
  const bool on_y = arguments.wrt == hvp_wrt::y;
  const loaded_array direction = load_array_file(arguments.direction_path);
  const matrix_view dir = direction_view(direction, arguments.direction_path, on_y ? m : n, d,
                                         on_y ? "Y (--wrt y)" : "X");
  loaded_array direction_y;
  matrix_view dir_y;
  if (!arguments.direction_y_path.empty()) {
    direction_y = load_array_file(arguments.direction_y_path);
    dir_y = direction_view(direction_y, arguments.direction_y_path, m, d, "Y (--dir-y)");
  }

  options o = arguments.solve_options;
  apply_run_flags(arguments.run, o);
  progress_reporter reporter(arguments.run.quiet, o.tolerance);
  o.on_progress = [&reporter](const progress& step) { reporter.report(step); };
  solver s(p, o);  // validates the problem before --out is touched
  atomic_output output(arguments.out_dir);
  const result r = s.solve();

  const bool joint = arguments.wrt == hvp_wrt::xy;
  const std::int64_t rows = on_y ? m : n;
  std::vector<double> product(static_cast<std::size_t>(rows * d)), product_y(joint ? static_cast<std::size_t>(m * d) : 0);
  const mutable_matrix_view out = host_matrix(product.data(), rows, d);
  const mutable_matrix_view out_y = joint ? host_matrix(product_y.data(), m, d) : mutable_matrix_view{};
  hvp_report report;
  const auto timed_product = [&] {
    const auto start = std::chrono::steady_clock::now();
    report = compute_products(s, arguments, dir, dir_y, out, out_y);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  const double first_seconds = timed_product();
  std::vector<double> repeats;
  for (int i = 0; i < arguments.repeat; ++i) repeats.push_back(timed_product());
  std::sort(repeats.begin(), repeats.end());
  const double hvp_seconds = repeats.empty() ? first_seconds : repeats[repeats.size() / 2];
  require_finite(product, joint ? "hvp_x.npy" : "hvp.npy");
  require_finite(product_y, "hvp_y.npy");
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
  const auto dtype = output_dtype(o.precision);
  if (joint) {
    output.add("hvp_x.npy", encode_npy(product, {n, d}, dtype));
    output.add("hvp_y.npy", encode_npy(product_y, {m, d}, dtype));
  } else {
    output.add("hvp.npy", encode_npy(product, {rows, d}, dtype));
  }
  output.add("hvp.json", json.str() + "\n");
  output.commit();
  std::printf("%s\n", json.str().c_str());
}

}  // namespace flashsinkhorn::cli
