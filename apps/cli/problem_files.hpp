// The problem `solve` and `hvp` read from files: the clouds X and Y, the optional weights a and b,
// and the scalars eps and cost scale. Its flags, its required-option checks and its loading live
// here so that both commands parse, check and load it the same way.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "flag_parser.hpp"
#include "flashsinkhorn/problem.hpp"
#include "loaded_array.hpp"

namespace flashsinkhorn::cli {

struct problem_files {
  std::string x_path;
  std::string y_path;
  std::optional<std::string> a_path;
  std::optional<std::string> b_path;
  std::optional<double> eps;  // required: empty until --eps is given
  double cost_scale = 1.0;
};

// Appends --x, --y, --a, --b (the files), writing into `files`.
void add_point_file_flags(std::vector<flag_spec>& specs, problem_files& files);
// Appends --eps and --cost-scale, writing into `files`.
void add_eps_flags(std::vector<flag_spec>& specs, problem_files& files);

// Throws bad_input naming the first missing required option: --x, --y, then --eps.
void require_point_files(const problem_files& files);
void require_eps(const problem_files& files);

// The arrays read from the files and the problem viewing them. Neither copyable nor movable:
// `view`'s pointers go into the arrays, which must outlive every solve of the problem.
// Throws bad_input for an unreadable file or an array of the wrong rank (the file's path leads
// the message); call only after require_point_files and require_eps.
struct loaded_problem {
  explicit loaded_problem(const problem_files& files);
  loaded_problem(const loaded_problem&) = delete;
  loaded_problem& operator=(const loaded_problem&) = delete;

  loaded_array x;
  loaded_array y;
  std::optional<loaded_array> a;
  std::optional<loaded_array> b;
  problem view;
};

}  // namespace flashsinkhorn::cli
