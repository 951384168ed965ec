// The host-side O(n·d) loops of the Hessian-vector product and the plan's products on host
// vectors (host_matrix_store.cpp, solved_plan.cpp) over all cores. Measured on the H200 machine (2026-11-30, FLASHSINKHORN_TRACE): spreading the HVP's
// host loops over its 16 cores changed nothing measurable — their time was the page faults of
// fresh 5 MB arrays, not arithmetic (docs/cuda_backend.md) — so this is for the CPU backend's host
// store, whose loops are the product's own work. Small loops stay on the calling thread.
#pragma once

#include <cstdint>

namespace flashsinkhorn::detail {

// Elements below which a loop is not worth waking the thread pool for.
inline constexpr std::int64_t kParallelElements = 1 << 15;

// body(i) for i in [0, rows), rows split across the OpenMP threads when rows·row_width elements
// are worth it. The bodies must write disjoint data.
template <class Body>
void parallel_rows(std::int64_t rows, std::int64_t row_width, const Body& body) {
#pragma omp parallel for schedule(static) if (rows * row_width >= kParallelElements)
  for (std::int64_t i = 0; i < rows; ++i) body(i);
}

}  // namespace flashsinkhorn::detail
