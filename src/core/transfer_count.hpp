// Counting the host↔device copies a solver makes (transfer_statistics.hpp). Every counted copy goes
// through one of these; a null `stats` counts nothing (backends built outside a solver).
#pragma once

#include <algorithm>
#include <cstdint>

#include "flashsinkhorn/transfer_statistics.hpp"

namespace flashsinkhorn::detail {

inline void count_host_to_device(transfer_statistics* stats, std::int64_t bytes) {
  if (stats == nullptr || bytes <= 0) return;
  ++stats->host_to_device_copies;
  stats->host_to_device_bytes += bytes;
  stats->largest_copy_bytes = std::max(stats->largest_copy_bytes, bytes);
}

inline void count_device_to_host(transfer_statistics* stats, std::int64_t bytes) {
  if (stats == nullptr || bytes <= 0) return;
  ++stats->device_to_host_copies;
  stats->device_to_host_bytes += bytes;
  stats->largest_copy_bytes = std::max(stats->largest_copy_bytes, bytes);
}

}  // namespace flashsinkhorn::detail
