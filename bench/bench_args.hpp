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

inline precision parse_precision(const std::string& name) {
  if (const auto mode = precision_from_string(name)) return *mode;
  std::fprintf(stderr, "unknown precision %s\n", name.c_str());
  std::exit(2);
}

}  // namespace flashsinkhorn::bench
