#include "run_flags.hpp"

#include <cstdio>

#include "option_names.hpp"

namespace flashsinkhorn::cli {

void add_run_flags(std::vector<flag_spec>& specs, run_flags& flags) {
  specs.push_back({"--device", "D", "cpu, cuda, cuda:<k> or auto (default: cuda when available)",
                   [&flags](std::string_view v) { flags.device = parse_device(v, flags.cuda_device); }});
  specs.push_back({"--precision", "P", "fp32 (default), fp64, tf32 or bf16",
                   [&flags](std::string_view v) { flags.mode = parse_precision(v); }});
  specs.push_back({"--threads", "T", "CPU threads (default: OpenMP's default)",
                   [&flags](std::string_view v) { flags.threads = parse_int("--threads", v, 0); }});
  specs.push_back({"--quiet", "", "no progress on stderr", [&flags](std::string_view) { flags.quiet = true; }});
  specs.push_back({"--help", "", "print this help and exit", [&flags](std::string_view) { flags.help = true; }});
}

void apply_run_flags(const run_flags& flags, options& o) {
  o.device = flags.device;
  o.cuda_device = flags.cuda_device;
  o.precision = flags.mode;
  o.cpu_threads = flags.threads;
}

bool printed_usage(const run_flags& flags, std::string (*usage)()) {
  if (!flags.help) return false;
  std::fputs(usage().c_str(), stdout);
  return true;
}

}  // namespace flashsinkhorn::cli
