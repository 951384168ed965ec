// Flags shared by `solve`, `demo` and `hvp`: where and how precisely to compute, and how chatty to be.
#pragma once

#include <string>
#include <vector>

#include "flag_parser.hpp"
#include "flashsinkhorn/options.hpp"

namespace flashsinkhorn::cli {

struct run_flags {
  device_kind device = device_kind::automatic;
  int cuda_device = 0;
  precision mode = precision::fp32;
  int threads = 0;  // 0: OpenMP's default
  bool quiet = false;
  bool help = false;
};

// Appends --device, --precision, --threads, --quiet and --help, writing into `flags`.
void add_run_flags(std::vector<flag_spec>& specs, run_flags& flags);

// Copies the run flags into library options.
void apply_run_flags(const run_flags& flags, options& o);

// With --help: prints `usage()` on stdout and returns true (the command then does nothing else).
[[nodiscard]] bool printed_usage(const run_flags& flags, std::string (*usage)());

}  // namespace flashsinkhorn::cli
