// The scalars a solve reports, reduced on the device from the backend's vectors (so that the
// potentials never cross to the host): the dual value's terms (core/dual_value.hpp) and the primal
// terms of one plan pass (solver.cpp, primal_cost). Elementwise kernels by hand, sums by CUB (the
// weighted φ as one CUB transform-reduce); the results stay in device memory for one download of a
// few doubles.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/device_buffer.hpp"

namespace flashsinkhorn::detail {

// *out = Σ_i w_i·φ(h_i), φ(h) = h (rho ≤ 0: balanced) or (ρ + ε/2)·(1 − e^{−h/ρ}) (core/dual_value.hpp).
// `scratch` grows as needed and must outlive the enqueued work.
cudaError_t launch_weighted_phi_sum(const double* weights, const double* potential, std::int64_t count, double eps,
                                    double rho, double* out, device_buffer<unsigned char>& scratch,
                                    cudaStream_t stream);

// *out = Σ_i values[i]; `scratch` as above.
cudaError_t launch_sum(const double* values, std::int64_t count, double* out, device_buffer<unsigned char>& scratch,
                       cudaStream_t stream);

// shifted_j = g_j − *numerator / *denominator (the b-weighted mean ḡ = Σ b g/Σ b, device scalars).
cudaError_t launch_shifted(const double* g, std::int64_t count, const double* numerator, const double* denominator,
                           double* shifted, cudaStream_t stream);

// The per-row terms of the primal objective after a plan pass with V = g − ḡ and the cost
// (solver.cpp's primal_cost: m_i the row mass of math/point_gradient.hpp), into three (rows,) buffers:
//   transport_i = m_i·cost_i
//   entropy_i   = m_i·[log(m_i/a_i) − lse_i + (weighted_i + ḡ − cost_i)/ε]
//   mass_i      = m_i                                  (all three 0 where m_i = 0)
struct primal_row_terms_args {
  const double* weights = nullptr;    // a (rows,)
  const double* potential = nullptr;  // f (rows,), read when unbalanced
  const double* lse = nullptr;
  const double* weighted = nullptr;  // Σ_j softmax_ij (g_j − ḡ)
  const double* cost = nullptr;
  const double* shift_numerator = nullptr;  // ḡ = *shift_numerator / *shift_denominator
  const double* shift_denominator = nullptr;
  std::int64_t rows = 0;
  double eps = 1;
  bool unbalanced = false;
  double* transport = nullptr;
  double* entropy = nullptr;
  double* mass = nullptr;
};
cudaError_t launch_primal_row_terms(const primal_row_terms_args& args, cudaStream_t stream);

}  // namespace flashsinkhorn::detail
