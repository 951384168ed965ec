#include "peak_rss.hpp"

#include <fstream>
#include <sstream>
#include <string>

namespace flashsinkhorn::cli {

std::optional<std::int64_t> peak_resident_bytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) != 0) continue;
    std::istringstream fields(line.substr(6));
    std::int64_t kib = 0;
    std::string unit;
    if (fields >> kib >> unit && unit == "kB") return kib * 1024;
    return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace flashsinkhorn::cli
