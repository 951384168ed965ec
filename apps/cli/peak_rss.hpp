// The program's own peak resident memory, for the solve and otdd summaries: Linux's VmHWM
// (/proc/self/status), the high-water mark of this program's address space alone. getrusage's
// ru_maxrss is not that for a program started by fork and exec from a large parent (a Python
// benchmark driver): it keeps the parent's peak from before the exec, so a 13 MB solve read as
// 1.1 GB in the CPU suite.
#pragma once

#include <cstdint>
#include <optional>

namespace flashsinkhorn::cli {

// Bytes; nothing where /proc/self/status has no VmHWM line (not Linux).
[[nodiscard]] std::optional<std::int64_t> peak_resident_bytes();

}  // namespace flashsinkhorn::cli
