// An environment setting that is a size in whole MiB (FLASHSINKHORN_STREAMED_L2_MIB,
// FLASHSINKHORN_CPU_DOT_CACHE_MIB): unset or empty is the default; anything but a whole number in
// [0, max_mib] is an error that names the variable.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <string>

#include "flashsinkhorn/error.hpp"

namespace flashsinkhorn::detail {

// The setting `text` of `variable` in bytes.
inline std::int64_t parse_mib_setting(const char* text, const char* variable, std::int64_t default_mib,
                                      std::int64_t max_mib) {
  constexpr std::int64_t kMiB = std::int64_t{1} << 20;
  if (text == nullptr || *text == '\0') return default_mib * kMiB;
  char* end = nullptr;
  const long long value = std::strtoll(text, &end, 10);
  if (end == text || *end != '\0' || value < 0 || value > max_mib)
    throw invalid_argument(std::string(variable) + " must be a whole number of MiB in [0, " + std::to_string(max_mib) +
                           "] (or unset), got '" + text + "'");
  return value * kMiB;
}

}  // namespace flashsinkhorn::detail
