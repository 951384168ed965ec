// Host driver of the device-resident projected CG (schur_cg.hpp).
#include "cuda/schur_cg.hpp"

#include <array>
#include <utility>

#include "cuda/cuda_check.hpp"
#include "cuda/device_buffer.hpp"
#include "cuda/schur_cg_kernels.cuh"

namespace flashsinkhorn::detail {
namespace {

using kernels::schur_cg_state;

// Iterations enqueued ahead of the last state the host has read.
constexpr int kInFlight = 3;

// Pinned host copies of the state, one per iteration in flight, each with the event that marks
// its copy done.
class state_ring {
 public:
  state_ring() {
    FS_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&states_), sizeof(schur_cg_state) * kSlots));
    for (cudaEvent_t& e : events_) FS_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  }
  ~state_ring() {
    for (cudaEvent_t e : events_) FS_CUDA_CHECK_LOG(cudaEventDestroy(e));
    FS_CUDA_CHECK_LOG(cudaFreeHost(states_));
  }
  state_ring(const state_ring&) = delete;
  state_ring& operator=(const state_ring&) = delete;

  void enqueue_copy(int iteration, const schur_cg_state* device_state, cudaStream_t stream) {
    const int slot = iteration % kSlots;
    FS_CUDA_CHECK(cudaMemcpyAsync(&states_[slot], device_state, sizeof(schur_cg_state), cudaMemcpyDeviceToHost, stream));
    FS_CUDA_CHECK(cudaEventRecord(events_[slot], stream));
  }
  // The state after `iteration`'s step, waiting for its copy.
  [[nodiscard]] const schur_cg_state& wait(int iteration) {
    const int slot = iteration % kSlots;
    FS_CUDA_CHECK(cudaEventSynchronize(events_[slot]));
    return states_[slot];
  }

 private:
  static constexpr int kSlots = kInFlight;
  schur_cg_state* states_ = nullptr;
  std::array<cudaEvent_t, kSlots> events_{};
};

}  // namespace

struct schur_cg_workspace::impl {
  device_buffer<double> c, mu, diagonal, rhs, product, solution, residual, direction, previous_residual, preconditioned;
  device_buffer<schur_cg_state> state;  // one
  state_ring ring;
};

schur_cg_workspace::schur_cg_workspace() = default;
schur_cg_workspace::~schur_cg_workspace() = default;

schur_cg_workspace::impl& schur_cg_workspace::get() {
  if (!impl_) impl_ = std::make_unique<impl>();
  return *impl_;
}

cudaError_t launch_hadamard(double* out, const double* scale, const double* in, std::int64_t count, cudaStream_t stream) {
  constexpr int kThreads = 256;
  if (count <= 0) return cudaSuccess;
  kernels::hadamard_kernel<<<static_cast<unsigned>((count + kThreads - 1) / kThreads), kThreads, 0, stream>>>(
      out, scale, in, count);
  return cudaGetLastError();
}

projected_cg_outcome device_schur_cg(schur_cg_workspace& workspace, const schur_product& enqueue_product,
                                     const schur_cg_inputs& inputs,
                                     const projected_cg_settings& settings, cudaStream_t stream,
                                     const schur_preconditioner* precondition) {
  const auto m = static_cast<std::int64_t>(inputs.rhs->size());
  projected_cg_outcome out;
  out.solution.assign(static_cast<std::size_t>(m), 0.0);
  if (m == 0) return out;

  schur_cg_workspace::impl& w = workspace.get();
  const auto size = static_cast<std::size_t>(m);
  kernels::schur_cg_vectors v;
  v.m = m;
  v.column_sums = upload(w.c, *inputs.column_sums, stream);
  v.column_masses = upload(w.mu, *inputs.column_masses, stream);
  v.diagonal = upload(w.diagonal, *inputs.diagonal, stream);
  double* product = reserve(w.product, size, stream);
  v.product = product;
  v.solution = reserve(w.solution, size, stream);
  v.residual = reserve(w.residual, size, stream);
  v.direction = reserve(w.direction, size, stream);
  v.previous_residual = precondition != nullptr ? reserve(w.previous_residual, size, stream) : nullptr;
  double* preconditioned = precondition != nullptr ? reserve(w.preconditioned, size, stream) : nullptr;
  v.tolerance = settings.tolerance;
  v.project = settings.project;
  v.state = reserve(w.state, 1, stream);

  state_ring& ring = w.ring;
  kernels::schur_cg_start_kernel<<<1, kernels::kSchurCgThreads, 0, stream>>>(v, upload(w.rhs, *inputs.rhs, stream));
  FS_CUDA_CHECK(cudaGetLastError());
  const int* done = &v.state->done;
  // The flexible CG's step: the advance, the preconditioner on the new residual, the direction.
  auto precondition_then_direct = [&](bool first) {
    (*precondition)(v.residual, preconditioned, done);
    kernels::schur_cg_direction_kernel<<<1, kernels::kSchurCgThreads, 0, stream>>>(v, preconditioned, first);
    FS_CUDA_CHECK(cudaGetLastError());
  };
  if (precondition != nullptr) precondition_then_direct(true);
  ring.enqueue_copy(0, v.state, stream);
  // Slot `it` holds the state after `it` steps (slot 0: after the start).
  for (int it = 1; it <= settings.max_iterations; ++it) {
    if (it >= kInFlight && ring.wait(it - kInFlight).done) break;
    enqueue_product(v.direction, product);
    if (precondition == nullptr) {
      kernels::schur_cg_step_kernel<<<1, kernels::kSchurCgThreads, 0, stream>>>(v);
      FS_CUDA_CHECK(cudaGetLastError());
    } else {
      kernels::schur_cg_advance_kernel<<<1, kernels::kSchurCgThreads, 0, stream>>>(v);
      FS_CUDA_CHECK(cudaGetLastError());
      precondition_then_direct(false);
    }
    ring.enqueue_copy(it, v.state, stream);
  }
  schur_cg_state final_state{};
  FS_CUDA_CHECK(cudaMemcpyAsync(&final_state, v.state, sizeof final_state, cudaMemcpyDeviceToHost, stream));
  FS_CUDA_CHECK(cudaMemcpyAsync(out.solution.data(), v.solution, static_cast<std::size_t>(m) * sizeof(double),
                                cudaMemcpyDeviceToHost, stream));
  FS_CUDA_CHECK(cudaStreamSynchronize(stream));
  out.iterations = final_state.iterations;
  out.recurrence_residual = final_state.residual;
  out.breakdown = final_state.breakdown != 0;
  return out;
}

}  // namespace flashsinkhorn::detail
