#include "problem_files.hpp"

#include "array_file.hpp"
#include "bad_input.hpp"

namespace flashsinkhorn::cli {
namespace {

std::optional<loaded_array> load_if_given(const std::optional<std::string>& path) {
  if (!path) return std::nullopt;
  return load_array_file(*path);
}

}  // namespace

void add_point_file_flags(std::vector<flag_spec>& specs, problem_files& files) {
  specs.push_back({"--x", "FILE", "source points (n, d): .npy, .npz or .csv",
                   [&files](std::string_view v) { files.x_path = v; }});
  specs.push_back({"--y", "FILE", "target points (m, d)", [&files](std::string_view v) { files.y_path = v; }});
  specs.push_back({"--a", "FILE", "source weights (n,) (default: uniform)",
                   [&files](std::string_view v) { files.a_path = std::string(v); }});
  specs.push_back({"--b", "FILE", "target weights (m,) (default: uniform)",
                   [&files](std::string_view v) { files.b_path = std::string(v); }});
}

void add_eps_flags(std::vector<flag_spec>& specs, problem_files& files) {
  specs.push_back({"--eps", "E", "entropic temperature eps > 0 (required)",
                   [&files](std::string_view v) { files.eps = parse_finite_double("--eps", v); }});
  specs.push_back({"--cost-scale", "S", "s in C = s*|x-y|^2 (default 1; 0.5 is GeomLoss's convention)",
                   [&files](std::string_view v) { files.cost_scale = parse_finite_double("--cost-scale", v); }});
}

void require_point_files(const problem_files& files) {
  if (files.x_path.empty()) throw bad_input("missing required option --x (the source points file)");
  if (files.y_path.empty()) throw bad_input("missing required option --y (the target points file)");
}

void require_eps(const problem_files& files) {
  if (!files.eps) throw bad_input("missing required option --eps (the entropic temperature)");
}

loaded_problem::loaded_problem(const problem_files& files)
    : x(load_array_file(files.x_path)),
      y(load_array_file(files.y_path)),
      a(load_if_given(files.a_path)),
      b(load_if_given(files.b_path)) {
  view.x = points_view(x, files.x_path);
  view.y = points_view(y, files.y_path);
  if (a) view.a = weights_view(*a, *files.a_path);
  if (b) view.b = weights_view(*b, *files.b_path);
  view.eps = files.eps.value_or(0.0);
  view.cost_scale = files.cost_scale;
}

}  // namespace flashsinkhorn::cli
