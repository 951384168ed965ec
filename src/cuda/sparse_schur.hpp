// The sparse_plan preconditioner on the device (core/sparse_plan_preconditioner.hpp is the host's):
// from each x row's K largest plan entries (plan_top_entries.hpp),
//   S_k = diag(d) − Σ_i a_i·s_i^(K)·s_i^(K)ᵀ,   d = the CG's (damped) column sums (+ shift), raised
//   where needed to keep S_k diagonally dominant (sparse_plan_diagonal, the host's rule),
// kept as W (n × K, W_iu = √a_i·s_iu) and by columns (a stable CUB radix sort of the entries by
// key, so the layout and every sum in it are deterministic); K must be kTopEntries (the solve
// kernel's unrolled rows). solve enqueues x ≈ S_k⁻¹·r by an inner Jacobi-preconditioned CG in one
// cooperative kernel (sparse_schur_kernels.cuh) to a relative residual of kInnerTolerance: at
// ε = 0.1 on N(0, I_64) clouds S_k is within ~1e-8 of S, so the outer (flexible) CG needs a few
// iterations (bench/studies/sparse_schur_preconditioner.py).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "core/sparse_plan_preconditioner.hpp"
#include "cuda/device_buffer.hpp"

namespace flashsinkhorn::detail {

// The device memory of S_k and of its solve, grown on demand and kept between products (the
// backend owns one): building and solving allocate and free nothing once it is warm, so no
// cudaFree synchronises the device in the middle of a CG.
struct sparse_schur_buffers {
  device_buffer<int> keys, sort_keys, sorted_keys, ids, sorted_ids, column_offsets, column_rows, iterations;
  device_buffer<double> weights, column_weights, masses, sums, diagonal, inverse_diagonal;
  device_buffer<double> row_values, residual, scaled, product, direction, direction_product, partials;
  device_buffer<unsigned char> sort_temp;
};

class sparse_schur {
 public:
  static constexpr double kInnerTolerance = kSparsePlanInnerTolerance;  // the host preconditioner's rule
  static constexpr int kInnerIterations = kSparsePlanInnerIterations;

  // Enqueues the build on `stream` into `buffers` (which must outlive this object and serve no
  // other sparse_schur meanwhile). entry_keys, entry_values: the top entries (n, K) on the device;
  // row_masses: a (n,) on the host; column_sums: d (m,) on the host, + `shift` on the diagonal.
  sparse_schur(sparse_schur_buffers& buffers, const int* entry_keys, const double* entry_values, std::int64_t n,
               int entries_per_row, const std::vector<double>& row_masses, const std::vector<double>& column_sums,
               double shift, int device, cudaStream_t stream);

  // Enqueues solution ≈ S_k⁻¹·rhs (device (m,) vectors, distinct) to a relative residual of
  // `tolerance` within `max_iterations`; nothing happens when *skip ≠ 0 on the device at that point
  // of the stream (skip may be nullptr).
  void solve(const double* rhs, double* solution, const int* skip, cudaStream_t stream,
             double tolerance = kInnerTolerance, int max_iterations = kInnerIterations) const;

  // The iterations the last solve ran (synchronises the stream); 0 before any.
  [[nodiscard]] int last_iterations(cudaStream_t stream) const;

 private:
  sparse_schur_buffers& buffers_;
  std::int64_t n_ = 0, m_ = 0;
  int entries_per_row_ = 0;
  int blocks_ = 0;  // of the cooperative solve: all resident at once
};

}  // namespace flashsinkhorn::detail
