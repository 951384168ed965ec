// `flashsinkhorn solve`: load the clouds and weights, solve, print the JSON summary.
#include <cstdio>
#include <optional>
#include <string>
#include <utility>

#include "flashsinkhorn/error.hpp"

#include "commands.hpp"
#include "problem_files.hpp"
#include "solve_arguments.hpp"
#include "solve_session.hpp"

namespace flashsinkhorn::cli {
namespace {

// The library names its arguments X, Y, a, b ("X contains NaN at row 3, column 1"); the user
// knows them as files. Appends "(X = <path>)" when the message starts with such a name.
std::string with_file_name(const std::string& message, const problem_files& files) {
  const std::pair<std::string, std::optional<std::string>> names[] = {
      {"X", files.x_path}, {"Y", files.y_path}, {"a", files.a_path}, {"b", files.b_path}};
  for (const auto& [label, path] : names) {
    const bool names_it = message.starts_with(label + " ") || message.starts_with(label + ":");
    if (path && names_it) return message + " (" + label + " = " + *path + ")";
  }
  return message;
}

}  // namespace

void run_solve_command(std::span<const std::string> args) {
  const solve_arguments arguments = parse_solve_arguments(args);
  if (printed_usage(arguments.run, solve_usage)) return;
  const loaded_problem inputs(arguments.files);  // outlives the solve: the problem views its arrays

  options o = arguments.solve_options;
  apply_run_flags(arguments.run, o);
  try {
    const json_object json = solve_and_describe(inputs.view, o, arguments.run, {arguments.out_dir, arguments.write_gradients});
    std::printf("%s\n", json.str().c_str());
  } catch (const invalid_argument& e) {
    throw invalid_argument(with_file_name(e.what(), arguments.files));
  }
}

}  // namespace flashsinkhorn::cli
