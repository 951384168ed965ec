// The arguments of `flashsinkhorn demo`.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "run_flags.hpp"

namespace flashsinkhorn::cli {

struct demo_arguments {
  std::optional<std::int64_t> points;  // n = m; default depends on the device (see demo_command)
  run_flags run;
};

[[nodiscard]] demo_arguments parse_demo_arguments(std::span<const std::string> args);

[[nodiscard]] std::string demo_usage();

}  // namespace flashsinkhorn::cli
