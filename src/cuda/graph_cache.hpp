// CUDA graphs of recorded operation sequences: the iteration blocks of the solver loop
// (backend::run_block). A block arrives as a sequence of operations resolved to buffers and
// scalars (Op, compared with ==); `run` enqueues it on the stream in one of two ways:
//   plain   enqueue(op) for each op in order — what the backend does outside blocks;
//   graph   one cudaGraphLaunch of an executable graph captured from those same enqueue calls.
// A graph is replayed only for a sequence equal, op by op, to the one it was captured from, so
// every captured pointer (slot swaps move them) and scalar (ε, damping, blend, the error flag) is
// checked, never assumed. Policy:
//   - a sequence seen for the first time runs plain: one-off blocks (the shorter last block, a
//     solve that converges in its first block) never pay for a capture and an instantiation, and
//     the kernels are loaded and their attributes set outside any capture;
//   - seen again, it is captured, instantiated and launched; later sightings launch that graph;
//   - the kCapacity most recently used sequences are remembered, the least recently used dropped.
// Failures: when the stream cannot be captured (the legacy default stream) or an enqueue call
// breaks a rule of stream capture (an API call not permitted while capturing), graphs are turned
// off for good and every block runs plain — nothing of a failed capture executed, so the block
// simply runs again. Any other error throws cuda_error (out_of_memory) naming the step; the stream
// is never left capturing.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "cuda/cuda_check.hpp"

namespace flashsinkhorn::detail {

struct graph_deleter {
  void operator()(cudaGraph_t graph) const noexcept { FS_CUDA_CHECK_LOG(cudaGraphDestroy(graph)); }
};
struct graph_exec_deleter {
  // An executable graph still running is freed when it completes (cudaGraphExecDestroy).
  void operator()(cudaGraphExec_t exec) const noexcept { FS_CUDA_CHECK_LOG(cudaGraphExecDestroy(exec)); }
};
using graph_ptr = std::unique_ptr<std::remove_pointer_t<cudaGraph_t>, graph_deleter>;
using graph_exec_ptr = std::unique_ptr<std::remove_pointer_t<cudaGraphExec_t>, graph_exec_deleter>;

struct graph_cache_statistics {
  int plain_blocks = 0;     // blocks enqueued op by op
  int captures = 0;         // graphs captured and instantiated
  int graph_launches = 0;   // blocks enqueued as one graph launch
  std::string unavailable;  // why graphs are off; empty while they are on
};

template <class Op>
class graph_cache {
 public:
  // Enqueues one op on the stream given to run() (captured when that stream is capturing).
  using enqueue_fn = std::function<cudaError_t(const Op&)>;

  // A symmetric block of odd length alternates between two swap parities; each comes as a full
  // block and as the shorter last one.
  static constexpr std::size_t kCapacity = 4;

  // From now on every block runs plain; `reason` says why (statistics().unavailable).
  void turn_off(std::string reason) {
    stats_.unavailable = std::move(reason);
    entries_.clear();
  }

  [[nodiscard]] const graph_cache_statistics& statistics() const noexcept { return stats_; }

  void run(const std::vector<Op>& ops, cudaStream_t stream, const enqueue_fn& enqueue) {
    if (ops.empty()) return;
    if (stats_.unavailable.empty()) {
      entry& seen = lookup(ops);
      if (seen.sightings++ > 0 && !seen.exec) seen.exec = capture(ops, stream, enqueue);
      if (seen.exec) {
        FS_CUDA_CHECK(cudaGraphLaunch(seen.exec.get(), stream));
        ++stats_.graph_launches;
        return;
      }
      if (!stats_.unavailable.empty()) entries_.clear();  // the capture just turned graphs off
    }
    run_plain(ops, enqueue);
  }

 private:
  struct entry {
    std::vector<Op> ops;
    int sightings = 0;
    graph_exec_ptr exec;  // null until the second sighting
  };

  // The entry of `ops`, made the most recently used (created if new).
  entry& lookup(const std::vector<Op>& ops) {
    auto it = std::find_if(entries_.begin(), entries_.end(), [&](const entry& e) { return e.ops == ops; });
    if (it == entries_.end()) {
      if (entries_.size() == kCapacity) entries_.pop_back();
      entries_.insert(entries_.begin(), entry{ops, 0, nullptr});
    } else {
      std::rotate(entries_.begin(), it, it + 1);
    }
    return entries_.front();
  }

  static std::string step_name(std::size_t k, std::size_t count, const char* when) {
    return "step " + std::to_string(k + 1) + " of " + std::to_string(count) + " of an iteration block" + when;
  }

  void run_plain(const std::vector<Op>& ops, const enqueue_fn& enqueue) {
    for (std::size_t k = 0; k < ops.size(); ++k) {
      const cudaError_t status = enqueue(ops[k]);
      if (status != cudaSuccess) throw_cuda_error(status, step_name(k, ops.size(), "").c_str(), __FILE__, __LINE__);
    }
    ++stats_.plain_blocks;
  }

  // Errors that mean "this cannot be captured", as opposed to a failing launch or device.
  static bool breaks_capture_rules(cudaError_t status) {
    return status == cudaErrorStreamCaptureUnsupported || status == cudaErrorStreamCaptureInvalidated ||
           status == cudaErrorStreamCaptureImplicit || status == cudaErrorNotSupported;
  }

  void turn_off_after(const std::string& what, cudaError_t status) {
    (void)cudaGetLastError();  // capture errors are not sticky; leave none behind for later checks
    stats_.unavailable = what + " returned " + cudaGetErrorName(status) + " (" + cudaGetErrorString(status) +
                         "); iteration blocks run as plain launches";
  }

  // The graph of `ops`, or null after turning graphs off. Throws on any other failure.
  graph_exec_ptr capture(const std::vector<Op>& ops, cudaStream_t stream, const enqueue_fn& enqueue) {
    // Thread-local mode: only this thread's capture-unsafe calls (cudaMalloc, synchronous copies,
    // stream synchronisation) are refused; other threads using CUDA meanwhile do not break it.
    cudaError_t status = cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal);
    if (breaks_capture_rules(status)) {
      turn_off_after("cudaStreamBeginCapture", status);
      return nullptr;
    }
    if (status != cudaSuccess)
      throw_cuda_error(status, "cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal)", __FILE__, __LINE__);
    std::size_t failed = ops.size();
    try {
      for (std::size_t k = 0; k < ops.size(); ++k) {
        status = enqueue(ops[k]);
        if (status != cudaSuccess) {
          failed = k;
          break;
        }
      }
    } catch (...) {  // enqueue returns its errors; should it ever throw, leave the stream usable
      cudaGraph_t partial = nullptr;
      if (cudaStreamEndCapture(stream, &partial) == cudaSuccess && partial != nullptr) graph_deleter()(partial);
      (void)cudaGetLastError();
      throw;
    }
    cudaGraph_t raw = nullptr;
    const cudaError_t ended = cudaStreamEndCapture(stream, &raw);  // always: the stream leaves capture mode
    const graph_ptr graph(raw);
    if (status != cudaSuccess) {  // the first failure is the informative one
      const std::string what = step_name(failed, ops.size(), " during CUDA graph capture");
      if (breaks_capture_rules(status)) {
        turn_off_after(what, status);
        return nullptr;
      }
      (void)cudaGetLastError();
      throw_cuda_error(status, what.c_str(), __FILE__, __LINE__);
    }
    if (breaks_capture_rules(ended)) {
      turn_off_after("cudaStreamEndCapture", ended);
      return nullptr;
    }
    if (ended != cudaSuccess) throw_cuda_error(ended, "cudaStreamEndCapture(stream, &graph)", __FILE__, __LINE__);
    if (graph == nullptr) throw cuda_error("CUDA graph capture of an iteration block returned no graph");
    cudaGraphExec_t exec = nullptr;
    FS_CUDA_CHECK(cudaGraphInstantiate(&exec, graph.get(), 0));
    ++stats_.captures;
    return graph_exec_ptr(exec);
  }

  std::vector<entry> entries_;  // most recently used first
  graph_cache_statistics stats_;
};

}  // namespace flashsinkhorn::detail
