// The model Hessian of a problem with few parameters, formed densely (trust_region_options::
// dense_model_dimension): H = ½(M + Mᵀ) with M's columns M e_i = ∇²f(θ)·e_i from p Hessian-vector
// products (symmetrised: inexact products — an implicit solve each in the OT losses — are not
// exactly symmetric), and its eigendecomposition H = Q diag(λ) Qᵀ. From it the trust-region
// subproblem is solved exactly (trust_region_exact.hpp) and λ_min read exactly; p products buy
// what Steihaug–Toint CG and Lanczos buy with more once p is small (10 for the shuffled regression,
// where an n = 10⁵ product costs 2.5 s).
#pragma once

#include <vector>

#include "optim/cg_recurrence.hpp"
#include "optim/vector_ops.hpp"

namespace flashsinkhorn::optim::detail {

struct dense_model {
  int size = 0;
  std::vector<double> hessian;       // (size, size) row-major, symmetric
  std::vector<double> eigenvalues;   // ascending
  std::vector<double> eigenvectors;  // (size, size) column-major: column k is the unit q_k of λ_k

  [[nodiscard]] bool empty() const { return size == 0; }
  [[nodiscard]] double lambda_min() const { return eigenvalues.front(); }
  [[nodiscard]] const_span eigenvector(int k) const;
};

// ∇²f(θ) by `size` products with the unit vectors (the product's θ is the caller's).
[[nodiscard]] dense_model form_dense_model(const hessian_product& hessian, int size);

// The same in an orthonormal basis Q that begins with `basis` (orthonormal, their `products` H q_j
// already made — a Lanczos run's first vectors): Q completed by Gram–Schmidt on the unit vectors, the
// size − basis.size() products missing made, then H = W Qᵀ for W = HQ (QQᵀ = I), symmetrised.
[[nodiscard]] dense_model form_dense_model_in_basis(const hessian_product& hessian, int size,
                                                    std::vector<host_vector> basis, std::vector<host_vector> products);

// The model of a given symmetric (size, size) row-major matrix; invalid_argument naming `field`
// when it has another number of entries or a non-finite one.
[[nodiscard]] dense_model dense_model_of(std::vector<double> hessian, int size, const char* field);

}  // namespace flashsinkhorn::optim::detail
