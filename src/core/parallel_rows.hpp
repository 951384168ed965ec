// The host-side linear algebra of the Hessian-vector product (joint_hvp.cpp, solved_plan.cpp,
// oriented_plan.cpp: reweightings, the values of a pass, the explicit terms) over all cores. Each
// loop is O(n·d) and memory-bound: at n = 10,000, d = 64 one touches 5 MB, and between the GPU
// passes of one HVP these loops on one core took half of its 42 ms (FLASHSINKHORN_TRACE on the
// H200 machine, 2026-11-30). Small loops stay on the calling thread.
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
