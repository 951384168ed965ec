// The hybrid's λ_min check on a dense model (hybrid.hpp, trust_region.dense_model_dimension ≥ p).
// First two Lanczos steps from the check's start vector q₁ (lanczos_start.hpp: warm or random): a Ritz
// value of T₁ = (α₁) or T₂ below −τ certifies λ_min < −τ (Ritz values bound λ_min from above), so a
// check in clearly negative curvature costs one or two products, as warm Lanczos does. Otherwise the
// Hessian is formed in the orthonormal basis those steps began (form_dense_model_in_basis: their
// products are not made again), p products in all, and its exact λ_min read.
#pragma once

#include "optim/dense_model.hpp"

namespace flashsinkhorn::optim::detail {

struct dense_check_outcome {
  double lambda_min = 0;          // certified: the Ritz value (an upper bound); else exact
  double residual = 0;            // ‖H y − θ y‖ of the certified Ritz pair; 0 when exact
  int products = 0;               // Hessian-vector products made
  bool certified_negative = false;
  host_vector ritz_vector;        // unit: the Ritz vector, or the exact eigenvector of λ_min
  dense_model model;              // formed (not empty) unless certified
};

// start: q₁, unit, p values.
dense_check_outcome dense_check(const hessian_product& hessian, host_vector start, double negative_tolerance);

}  // namespace flashsinkhorn::optim::detail
