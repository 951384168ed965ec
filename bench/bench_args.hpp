// Command-line pieces shared by the GPU benchmark programs: size lists ("10000x64,50000x8"),
// precision names, comma splitting. Header-only; the programs exit(2) on a bad value.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "flashsinkhorn/options.hpp"

namespace flashsinkhorn::bench {

struct size_case {
  std::int64_t n, d;
};

inline std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> parts;
  std::stringstream stream(text);
  std::string part;
  while (std::getline(stream, part, sep))
    if (!part.empty()) parts.push_back(part);
  return parts;
}

// "n1xd1,n2xd2,…" → the size cases.
inline std::vector<size_case> parse_sizes(const std::string& text) {
  std::vector<size_case> sizes;
  for (const auto& s : split(text, ',')) {
    const auto nd = split(s, 'x');
    if (nd.size() != 2) {
      std::fprintf(stderr, "bad size %s (expected NxD)\n", s.c_str());
      std::exit(2);
    }
    sizes.push_back({std::stoll(nd[0]), std::stoll(nd[1])});
  }
  return sizes;
}

// The flags every GPU benchmark takes: --sizes, --precisions, --iters, --repeats (defaults: the
// values `args` holds on entry). `extra(flag, value)` handles a program's own flags and returns
// false for one it does not know. Returns false (after a message) on an unknown flag.
struct run_args {
  std::vector<size_case> sizes;
  std::vector<std::string> precisions;
  int iterations = 10;
  int repeats = 7;
};

template <class Extra>
bool parse_run_args(int argc, char** argv, run_args& args, Extra extra) {
  for (int a = 1; a + 1 < argc; a += 2) {
    const std::string flag = argv[a];
    const std::string value = argv[a + 1];
    if (flag == "--sizes") {
      args.sizes = parse_sizes(value);
    } else if (flag == "--precisions") {
      args.precisions = split(value, ',');
    } else if (flag == "--iters") {
      args.iterations = std::stoi(value);
    } else if (flag == "--repeats") {
      args.repeats = std::stoi(value);
    } else if (!extra(flag, value)) {
      std::fprintf(stderr, "unknown flag %s\n", flag.c_str());
      return false;
    }
  }
  return true;
}

inline precision parse_precision(const std::string& name) {
  if (const auto mode = precision_from_string(name)) return *mode;
  std::fprintf(stderr, "unknown precision %s\n", name.c_str());
  std::exit(2);
}

}  // namespace flashsinkhorn::bench
