// `flashsinkhorn solve`: load the clouds and weights, solve, print the JSON summary.
#include <cstdio>
#include <optional>
#include <string>
#include <utility>

#include "flashsinkhorn/error.hpp"

#include "array_file.hpp"
#include "commands.hpp"
#include "solve_arguments.hpp"
#include "solve_session.hpp"

namespace flashsinkhorn::cli {
namespace {

// The library names its arguments X, Y, a, b ("X contains NaN at row 3, column 1"); the user
// knows them as files. Appends "(X = <path>)" when the message starts with such a name.
std::string with_file_name(const std::string& message, const solve_arguments& arguments) {
  const std::pair<std::string, std::optional<std::string>> names[] = {
      {"X", arguments.x_path}, {"Y", arguments.y_path}, {"a", arguments.a_path}, {"b", arguments.b_path}};
  for (const auto& [label, path] : names) {
    const bool names_it = message.starts_with(label + " ") || message.starts_with(label + ":");
    if (path && names_it) return message + " (" + label + " = " + *path + ")";
  }
  return message;
}

}  // namespace

void run_solve_command(std::span<const std::string> args) {
  const solve_arguments arguments = parse_solve_arguments(args);
  if (arguments.run.help) {
    std::fputs(solve_usage().c_str(), stdout);
    return;
  }
  // Loaded arrays own the data the problem's views point into; they outlive the solve.
  const loaded_array x = load_array_file(arguments.x_path);
  const loaded_array y = load_array_file(arguments.y_path);
  std::optional<loaded_array> a;
  std::optional<loaded_array> b;
  if (arguments.a_path) a = load_array_file(*arguments.a_path);
  if (arguments.b_path) b = load_array_file(*arguments.b_path);

  problem p;
  p.x = points_view(x, arguments.x_path);
  p.y = points_view(y, arguments.y_path);
  if (a) p.a = weights_view(*a, *arguments.a_path);
  if (b) p.b = weights_view(*b, *arguments.b_path);
  p.eps = arguments.eps;
  p.cost_scale = arguments.cost_scale;

  options o = arguments.solve_options;
  apply_run_flags(arguments.run, o);
  try {
    const json_object json = solve_and_describe(p, o, arguments.run, {arguments.out_dir, arguments.write_gradients});
    std::printf("%s\n", json.str().c_str());
  } catch (const invalid_argument& e) {
    throw invalid_argument(with_file_name(e.what(), arguments));
  }
}

}  // namespace flashsinkhorn::cli
