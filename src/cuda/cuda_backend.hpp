// The CUDA backend's entry points, callable from plain C++ (no CUDA headers here).
#pragma once

#include <memory>
#include <string>

#include "core/backend.hpp"
#include "core/prepared_cloud.hpp"
#include "flashsinkhorn/options.hpp"

struct CUstream_st;  // cudaStream_t is CUstream_st*

namespace flashsinkhorn::detail {

// Uploads the prepared clouds to device `device` and returns a backend computing there.
// Every operation, host↔device copies included, is ordered on one stream: `stream` when given
// (the caller's; pass cudaStreamLegacy for the legacy default stream, on which iteration blocks
// cannot become CUDA graphs), else a non-blocking stream the backend creates and owns. Reads
// (take_error, read_potential, plan_rows) wait for that stream; nothing else does.
// Throws cuda_error / out_of_memory with the failing call named.
std::unique_ptr<backend> make_cuda_backend(const prepared_problem& problem, precision mode, int device,
                                           CUstream_st* stream = nullptr);

// How a CUDA backend has run its iteration blocks (backend::run_block), for tests and benchmarks.
struct cuda_block_statistics {
  int plain_blocks = 0;            // enqueued launch by launch (first sighting, or graphs off)
  int captures = 0;                // CUDA graphs captured and instantiated
  int graph_launches = 0;          // enqueued as one graph launch
  std::string graphs_unavailable;  // why graphs are off; empty while they are used
};

// Throws invalid_argument when `compute` is not a CUDA backend.
cuda_block_statistics cuda_block_stats(const backend& compute);

// Number of visible CUDA devices (0 when there is no driver or no device; never throws).
int cuda_device_count() noexcept;

// "NVIDIA H200" etc.
std::string cuda_device_name(int device);

}  // namespace flashsinkhorn::detail
