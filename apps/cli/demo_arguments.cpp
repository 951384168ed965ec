#include "demo_arguments.hpp"

#include "bad_input.hpp"

namespace flashsinkhorn::cli {
namespace {

std::vector<flag_spec> demo_flags(demo_arguments& a) {
  std::vector<flag_spec> specs = {
      {"--n", "N", "points per cloud (default 5000 on the CPU, 100000 on CUDA)",
       [&a](std::string_view v) { a.points = parse_int("--n", v, 1); }},
  };
  add_run_flags(specs, a.run);
  return specs;
}

}  // namespace

demo_arguments parse_demo_arguments(std::span<const std::string> args) {
  demo_arguments arguments;
  parse_flags(args, demo_flags(arguments), [](const std::string& value) {
    throw bad_input("unexpected argument '" + value + "'");
  });
  return arguments;
}

std::string demo_usage() {
  demo_arguments unused;
  return "usage: flashsinkhorn demo [options]\n\n"
         "Solves a built-in problem (3 Gaussian blobs -> a ring, d = 3, fixed seed) and prints the\n"
         "same JSON as `solve`, plus \"demo\": true.\n\noptions:\n" +
         describe_flags(demo_flags(unused));
}

}  // namespace flashsinkhorn::cli
