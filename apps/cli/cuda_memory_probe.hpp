// The device's memory as the driver sees it (cudaMemGetInfo), for reports that compare what a run
// used with what the whole GPU holds. Built with the CUDA runtime only when the library's CUDA backend
// is (FLASHSINKHORN_CLI_HAS_CUDA); otherwise every query answers nothing.
#pragma once

#include <cstddef>
#include <optional>

namespace flashsinkhorn::cli {

struct cuda_memory_snapshot {
  std::size_t used_bytes = 0;   // total − free: every process and context on the device
  std::size_t total_bytes = 0;
};

// On CUDA device `device` (creating this process's context there if needed, so a first call's
// snapshot already includes the context). Nothing without CUDA in this build or when the query fails.
[[nodiscard]] std::optional<cuda_memory_snapshot> cuda_memory_in_use(int device);

}  // namespace flashsinkhorn::cli
