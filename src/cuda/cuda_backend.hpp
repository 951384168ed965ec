// The CUDA backend's entry points, callable from plain C++ (no CUDA headers here).
#pragma once

#include <memory>
#include <string>

#include "core/backend.hpp"
#include "core/prepared_cloud.hpp"
#include "flashsinkhorn/options.hpp"
#include "flashsinkhorn/problem.hpp"
#include "flashsinkhorn/transfer_statistics.hpp"

struct CUstream_st;  // cudaStream_t is CUstream_st*

namespace flashsinkhorn::detail {

// Uploads the prepared clouds to device `device` and returns a backend computing there.
// Every operation, host↔device copies included, is ordered on one stream: `stream` when given
// (the caller's; pass cudaStreamLegacy for the legacy default stream, on which iteration blocks
// cannot become CUDA graphs), else a non-blocking stream the backend creates and owns. Reads
// (take_error, read_potential, plan_rows) wait for that stream; nothing else does.
// Throws cuda_error / out_of_memory with the failing call named.
// `transfers`, when given, counts every host↔device copy of the backend's (transfer_statistics.hpp).
std::unique_ptr<backend> make_cuda_backend(const prepared_problem& problem, precision mode, int device,
                                           CUstream_st* stream = nullptr, transfer_statistics* transfers = nullptr);

// The scalars of a preparation made on the device (cuda/device_prepare.hpp), which the solver keeps.
struct device_preparation_summary {
  double cost_scale = 1;  // s, 0.5 for the cosine cost
  double mass_a = 1;      // Σa, Σb as given (1 when uniform)
  double mass_b = 1;
  double diameter = 0;    // options::diameter, else the joint bounding box's diagonal
  bool warm_start = false;  // the problem's initial_f, initial_g are in slots f, g
};

// A backend built from a problem whose X, Y (and a, b when given) live in CUDA memory on device
// o.cuda_device: validated and prepared there (cuda/device_prepare.hpp), read in the order of the
// caller's stream o.cuda_stream, on a stream the backend owns; a warm start's potentials (CUDA
// views too) validated there and copied into slots f, g. Preconditions: validate_arguments(p, o)
// passed; no label cost (the solver takes those problems through the host).
// Fills `summary`; throws invalid_argument with prepare()'s messages for bad values.
std::unique_ptr<backend> make_cuda_backend_on_device_inputs(const problem& p, const options& o,
                                                            transfer_statistics* transfers,
                                                            device_preparation_summary& summary);

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
