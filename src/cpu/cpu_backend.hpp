// The CPU backend: the row-stationary streaming algorithm of the GPU, on OpenMP threads and SIMD.
#pragma once

#include <cstdint>
#include <memory>

#include "core/backend.hpp"
#include "core/byte_budget.hpp"
#include "core/prepared_cloud.hpp"
#include "flashsinkhorn/options.hpp"

namespace flashsinkhorn::detail {

// fp64 computes in double; fp32 in float; tf32/bf16 round the points to that format (round to
// nearest even) and compute in float — the GPU's numerics, so the CPU is an oracle for each mode.
// threads = 0: OpenMP's default. `dot_cache_budget`: what the dots kept between passes may take
// (dot_cache.hpp; a limit of 0 keeps none; it must outlive the backend); without it, the process's
// (FLASHSINKHORN_CPU_DOT_CACHE_MIB, default 1 GiB, shared by every backend).
std::unique_ptr<backend> make_cpu_backend(const prepared_problem& problem, precision mode, int threads);
std::unique_ptr<backend> make_cpu_backend(const prepared_problem& problem, precision mode, int threads,
                                          byte_budget& dot_cache_budget);

}  // namespace flashsinkhorn::detail
