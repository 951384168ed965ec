// The scalars a solve reports, reduced on the device from the backend's vectors (so that the
// potentials never cross to the host): the dual value's terms (core/dual_value.hpp) and the primal
// terms of one plan pass (solver.cpp, primal_cost). Elementwise kernels by hand, sums one CTA each,
// several in one launch (block_sum.cuh); the results stay in device memory for one download of a
// few doubles.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>


namespace flashsinkhorn::detail {

// One sum *out = Σ_i w_i·φ(h_i) over `count` entries: w = `weights` (1 when null); φ of
// math/dual_phi.hpp (rho ≤ 0: φ(h) = h, balanced sides and plain sums).
struct weighted_phi_sum {
  const double* weights = nullptr;
  const double* values = nullptr;  // h
  std::int64_t count = 0;
  double rho = 0;
  double* out = nullptr;
};
constexpr int kMaxWeightedPhiSums = 6;

// Up to kMaxWeightedPhiSums sums (one ε) in one launch, one CTA each (block_sum.cuh).
cudaError_t launch_weighted_phi_sums(const weighted_phi_sum* sums, int count, double eps, cudaStream_t stream);

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
