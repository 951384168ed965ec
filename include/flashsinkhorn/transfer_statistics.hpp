// What a solver moved between host and device memory: the copies the CUDA backend and the
// preparation of CUDA inputs made (solver::transfers). With every array of a problem in CUDA memory,
// a solve and the point gradients read only scalars back (a marginal error, a validation flag, the
// value); a copy of n or n·d numbers here means a path that goes through the host (solver.hpp says
// which ones do).
#pragma once

#include <cstdint>

namespace flashsinkhorn {

struct transfer_statistics {
  std::int64_t host_to_device_copies = 0;
  std::int64_t host_to_device_bytes = 0;
  std::int64_t device_to_host_copies = 0;
  std::int64_t device_to_host_bytes = 0;
  // The largest single copy either way: the test of "only scalars crossed".
  std::int64_t largest_copy_bytes = 0;
};

}  // namespace flashsinkhorn
