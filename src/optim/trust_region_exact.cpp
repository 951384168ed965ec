#include "optim/trust_region_exact.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

namespace flashsinkhorn::optim::detail {
namespace {

// Bisection steps: each halves [lo, hi]; 200 reach float64 resolution from any start.
constexpr int kBisections = 200;

// ‖s(σ)‖ over the eigen-components `from`…p−1 at σ = lower + δ, from the shifted eigenvalues
// μ_k = λ_k + lower (∞ if a term divides a nonzero g̃_k by μ_k + δ ≤ 0). In δ rather than σ: near
// σ = −λ₁ the norm turns on σ + λ₁ = δ, which σ itself would hold only to 2⁻⁵³|λ₁|.
double step_norm(const std::vector<double>& shifted, const std::vector<double>& projected, double delta,
                 std::size_t from) {
  double sum = 0;
  for (std::size_t k = from; k < projected.size(); ++k) {
    const double denominator = shifted[k] + delta;
    if (denominator <= 0) {
      if (projected[k] != 0) return std::numeric_limits<double>::infinity();
      continue;
    }
    const double component = projected[k] / denominator;
    sum += component * component;
  }
  return std::sqrt(sum);
}

}  // namespace

exact_step_outcome exact_trust_region_step(const dense_model& model, const_span gradient, double radius,
                                           mutable_span step) {
  const auto p = static_cast<std::size_t>(model.size);
  const std::vector<double>& lambda = model.eigenvalues;
  std::vector<double> projected(p);  // g̃ = Qᵀg
  for (std::size_t k = 0; k < p; ++k) projected[k] = dot(model.eigenvector(static_cast<int>(k)), gradient);
  const double gradient_norm = norm2(gradient);

  exact_step_outcome outcome;
  outcome.negative_curvature = lambda[0] <= 0;
  // λ₁'s eigenspace (to rounding of the spectrum), and g's part in it.
  const double spread = std::fmax(std::fabs(lambda[0]), std::fabs(lambda[p - 1]));
  std::size_t bottom = 1;
  while (bottom < p && lambda[bottom] - lambda[0] <= 1e-12 * spread) ++bottom;
  double bottom_part = 0;
  for (std::size_t k = 0; k < bottom; ++k) bottom_part += projected[k] * projected[k];
  const bool orthogonal_to_bottom = std::sqrt(bottom_part) <= 1e-12 * gradient_norm;

  std::vector<double> component(p, 0.0);  // s̃
  const double lower = std::fmax(0.0, -lambda[0]);
  std::vector<double> shifted(p);  // μ_k = λ_k + lower ≥ 0 (μ₁ = 0 exactly when λ₁ ≤ 0)
  for (std::size_t k = 0; k < p; ++k) shifted[k] = k == 0 && lambda[0] <= 0 ? 0.0 : lambda[k] + lower;
  double delta = 0;  // σ − lower
  bool hard_case = false;
  if (lambda[0] > 0 && step_norm(shifted, projected, 0, 0) <= radius) {
    delta = 0;  // interior: the Newton step, σ = 0
  } else if (lambda[0] <= 0 && orthogonal_to_bottom && step_norm(shifted, projected, 0, bottom) <= radius) {
    hard_case = true;
    double inside = 0;
    for (std::size_t k = bottom; k < p; ++k) {
      component[k] = -projected[k] / shifted[k];
      inside += component[k] * component[k];
    }
    const double tau = std::sqrt(std::fmax(radius * radius - inside, 0.0));
    component[0] = projected[0] > 0 ? -tau : tau;
    outcome.on_boundary = true;
  } else {
    // ‖s(σ)‖ ≤ ‖g‖/(λ₁ + σ) ≤ Δ from σ = ‖g‖/Δ − λ₁ on: the root lies in δ ∈ (0, ‖g‖/Δ − λ₁ − lower];
    // here g ≠ 0, so the interval is not empty.
    double lo = 0, hi = std::fmax(0.0, gradient_norm / radius - lambda[0] - lower);
    for (int i = 0; i < kBisections; ++i) {
      const double mid = 0.5 * (lo + hi);
      if (mid <= lo || mid >= hi) break;  // float64 resolution
      (step_norm(shifted, projected, mid, 0) > radius ? lo : hi) = mid;
    }
    delta = hi;  // ‖s‖ ≤ Δ: feasible
    outcome.on_boundary = true;
  }
  if (!hard_case) {
    for (std::size_t k = 0; k < p; ++k)
      component[k] = shifted[k] + delta > 0 ? -projected[k] / (shifted[k] + delta) : 0.0;
  }
  const double sigma = lower + delta;
  fill(0.0, step);
  double model_value = 0;  // m(s) = Σ g̃_k s̃_k + ½λ_k s̃_k²
  for (std::size_t k = 0; k < p; ++k) {
    axpy(component[k], model.eigenvector(static_cast<int>(k)), step);
    model_value += projected[k] * component[k] + 0.5 * lambda[k] * component[k] * component[k];
  }
  outcome.shift = sigma;
  outcome.model_decrease = -model_value;
  return outcome;
}

}  // namespace flashsinkhorn::optim::detail
