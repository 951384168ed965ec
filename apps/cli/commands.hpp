// The subcommands. Each prints its JSON summary on stdout and returns normally, or throws:
// bad_input / flashsinkhorn::invalid_argument / flashsinkhorn::unsupported for the user's
// mistakes (main() exits 2), anything else for failures (main() exits 1).
#pragma once

#include <span>
#include <string>

namespace flashsinkhorn::cli {

void run_solve_command(std::span<const std::string> args);
void run_demo_command(std::span<const std::string> args);
void run_hvp_command(std::span<const std::string> args);
void run_otdd_command(std::span<const std::string> args);

}  // namespace flashsinkhorn::cli
