// The device-resident projected CG on a Schur complement S·v = c∘v − μ∘t(v) (core/backend.hpp,
// schur_system): the recurrence of core/projected_cg.hpp with every vector and scalar on the GPU
// (schur_cg_kernels.cuh). The host only enqueues: per iteration the caller's two plan passes, one
// step kernel and a 40-byte state copy, and it reads that state three iterations late, so the GPU
// never waits for the host; the iterations enqueued past convergence are no-ops (at most three
// wasted pairs of passes).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "core/projected_cg.hpp"

namespace flashsinkhorn::detail {

// Enqueues t = A_y(w∘A_x(p)) on the solve's stream: p and t are device (m,) float64 vectors.
using schur_product = std::function<void(const double* direction, double* product)>;

struct schur_cg_inputs {
  const std::vector<double>* column_sums = nullptr;    // c (m,)
  const std::vector<double>* column_masses = nullptr;  // μ (m,)
  const std::vector<double>* diagonal = nullptr;       // M (m,) > 0
  const std::vector<double>* rhs = nullptr;            // (m,)
};

// Enqueues z ≈ M⁻¹·r on the solve's stream (device (m,) float64 vectors), or nothing where the
// device int `skip` is set (the CG is done; see sparse_schur.hpp).
using schur_preconditioner = std::function<void(const double* residual, double* preconditioned, const int* skip)>;

// out_i = scale_i · in_i on the stream (device float64 vectors).
cudaError_t launch_hadamard(double* out, const double* scale, const double* in, std::int64_t count, cudaStream_t stream);

// The CG's device vectors and its pinned state ring, made on first use and kept between solves
// (a backend owns one): a warm solve allocates and frees nothing.
class schur_cg_workspace {
 public:
  schur_cg_workspace();
  ~schur_cg_workspace();
  schur_cg_workspace(const schur_cg_workspace&) = delete;
  schur_cg_workspace& operator=(const schur_cg_workspace&) = delete;
  struct impl;
  impl& get();

 private:
  std::unique_ptr<impl> impl_;
};

// With `precondition` the CG is the flexible one (schur_cg_kernels.cuh) and inputs.diagonal is
// not used as a preconditioner.
projected_cg_outcome device_schur_cg(schur_cg_workspace& workspace, const schur_product& enqueue_product,
                                     const schur_cg_inputs& inputs,
                                     const projected_cg_settings& settings, cudaStream_t stream,
                                     const schur_preconditioner* precondition = nullptr);

}  // namespace flashsinkhorn::detail
