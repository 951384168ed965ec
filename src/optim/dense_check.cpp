#include "optim/dense_check.hpp"

#include <cmath>
#include <utility>
#include <vector>

namespace flashsinkhorn::optim::detail {
namespace {

// A certified sample from the Ritz pair (θ, y) with H y available as `hy`.
dense_check_outcome certified(double ritz_value, host_vector y, const host_vector& hy, int products) {
  dense_check_outcome outcome;
  outcome.lambda_min = ritz_value;
  host_vector r(hy);
  axpy(-ritz_value, y, r);
  outcome.residual = norm2(r);
  outcome.products = products;
  outcome.certified_negative = true;
  outcome.ritz_vector = std::move(y);
  return outcome;
}

}  // namespace

dense_check_outcome dense_check(const hessian_product& hessian, host_vector start, double negative_tolerance) {
  const std::size_t p = start.size();
  std::vector<host_vector> basis{std::move(start)}, products(1, host_vector(p));
  hessian(basis[0], products[0]);
  const double alpha1 = dot(basis[0], products[0]);
  if (alpha1 < -negative_tolerance) return certified(alpha1, basis[0], products[0], 1);

  host_vector r(products[0]);  // β₁q₂ = Hq₁ − α₁q₁
  axpy(-alpha1, basis[0], r);
  axpy(-dot(basis[0], r), basis[0], r);  // once more: q₂ ⊥ q₁ to roundoff
  const double beta1 = norm2(r);
  if (p >= 2 && beta1 > 1e-12 * std::fabs(alpha1) && beta1 > 0) {
    scale(1 / beta1, r);
    basis.push_back(std::move(r));
    products.emplace_back(p);
    hessian(basis[1], products[1]);
    const double alpha2 = dot(basis[1], products[1]);
    // T₂ = [[α₁, β₁], [β₁, α₂]]: θ_min = mean − √(half-gap² + β₁²), its eigenvector (c, s) in (q₁, q₂).
    const double mean = 0.5 * (alpha1 + alpha2), half_gap = 0.5 * (alpha1 - alpha2);
    const double radius = std::hypot(half_gap, beta1);
    const double theta = mean - radius;
    if (theta < -negative_tolerance) {
      // (T₂ − θI)(c, s) = 0: (α₁ − θ)c + β₁s = 0 → (c, s) ∝ (β₁, θ − α₁), or (θ − α₂, β₁).
      double c = beta1, s = theta - alpha1;
      if (std::hypot(c, s) < 1e-300) c = theta - alpha2, s = beta1;
      const double length = std::hypot(c, s);
      c /= length, s /= length;
      host_vector y(p, 0.0), hy(p, 0.0);
      axpy(c, basis[0], y), axpy(s, basis[1], y);
      axpy(c, products[0], hy), axpy(s, products[1], hy);
      return certified(theta, std::move(y), hy, 2);
    }
  }
  dense_check_outcome outcome;
  outcome.products = static_cast<int>(p);
  outcome.model = form_dense_model_in_basis(hessian, static_cast<int>(p), std::move(basis), std::move(products));
  outcome.lambda_min = outcome.model.lambda_min();
  const const_span bottom = outcome.model.eigenvector(0);
  outcome.ritz_vector.assign(bottom.begin(), bottom.end());
  outcome.certified_negative = outcome.lambda_min < -negative_tolerance;
  return outcome;
}

}  // namespace flashsinkhorn::optim::detail
