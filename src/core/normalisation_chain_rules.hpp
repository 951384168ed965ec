// The chain rules through the library's two input normalisations, shared by every gradient
// (solver::gradient_*, potential_vjp):
//   cosine cost, x̂ = x/‖x‖:   ∇_x = (I − x̂x̂ᵀ)·∇_x̂ / ‖x‖                  (per row, in place)
//   weights, w̃ = w/Σw:        ∂/∂w_k = (h_k − ⟨w̃, h⟩)/Σw   for h = ∂/∂w̃   (in place)
#pragma once

#include <cstdint>
#include <numeric>
#include <vector>

namespace flashsinkhorn::detail {

// `grad`, `input`: (rows, dim) row-major; `norms`: (rows,) ‖x_i‖ of the input rows.
inline void through_cosine_normalisation(std::vector<double>& grad, const std::vector<double>& input,
                                         const std::vector<double>& norms, std::int64_t dim) {
  for (std::size_t i = 0; i < norms.size(); ++i) {
    const double* x = &input[i * dim];
    double* g = &grad[i * dim];
    double radial = 0;
    for (std::int64_t c = 0; c < dim; ++c) radial += x[c] / norms[i] * g[c];
    for (std::int64_t c = 0; c < dim; ++c) g[c] = (g[c] - radial * x[c] / norms[i]) / norms[i];
  }
}

// `normalised`: w̃ (sums to 1); `mass`: Σw as given.
inline void through_weight_normalisation(std::vector<double>& h, const std::vector<double>& normalised, double mass) {
  const double mean = std::inner_product(h.begin(), h.end(), normalised.begin(), 0.0);
  for (double& v : h) v = (v - mean) / mass;
}

}  // namespace flashsinkhorn::detail
