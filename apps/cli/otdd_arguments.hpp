// The arguments of `flashsinkhorn otdd`.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "otdd_data.hpp"
#include "run_flags.hpp"

namespace flashsinkhorn::cli {

struct otdd_arguments {
  std::string data_dir;  // holds mnist/ and fashion-mnist/
  subset_rule subset;    // --n, --seed
  double eps = 0.1;
  double scaling = 0.5;  // GeomLoss's ε-scaling ratio
  int max_iterations = 0;  // at the target ε after the schedule; 0 = GeomLoss's loop exactly
  double tolerance = 1e-3;
  int check_every = 10;
  std::optional<std::string> out_dir;  // label_distances.npy
  bool label_distances_only = false;   // stop after W (no solve)
  run_flags run;
};

[[nodiscard]] otdd_arguments parse_otdd_arguments(std::span<const std::string> args);

[[nodiscard]] std::string otdd_usage();

}  // namespace flashsinkhorn::cli
