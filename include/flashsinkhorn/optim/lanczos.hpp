// Lanczos estimate of the extreme eigenvalues λ_min, λ_max of a symmetric operator A: R^p → R^p known
// only through products A·v (a Hessian-vector product). Used for saddle detection: λ_min(∇²f) < 0
// means θ is not a local minimum and the Ritz vector is a direction of negative curvature.
//
// Algorithm (Golub & Van Loan §10.1, with full reorthogonalisation). From a unit q_1:
//   w = A q_j − α_j q_j − β_{j−1} q_{j−1},  α_j = q_jᵀ A q_j,
//   w ← w − Q_j(Q_jᵀ w) twice (classical Gram–Schmidt, twice: Q_j stays orthonormal to roundoff),
//   β_j = ‖w‖, q_{j+1} = w/β_j.
// After j steps A Q_j = Q_j T_j + β_j q_{j+1} e_jᵀ with T_j = tridiag(β, α, β). The Ritz values θ_i
// (eigenvalues of T_j, eigenvectors s_i) approximate eigenvalues of A with the residual bound
//   ‖A y_i − θ_i y_i‖₂ = β_j |e_jᵀ s_i|,  y_i = Q_j s_i,
// so some eigenvalue of A lies within that bound of θ_i. By interlacing θ_min ≥ λ_min and
// θ_max ≤ λ_max at every step: a Ritz value below a threshold certifies λ_min below it.
//
// Cost: one A·v per step, O(j·p) flops for the reorthogonalisation and O(k·p) memory for the k
// Lanczos vectors — meant for small k (tens to a few hundred), not for p-sized Krylov spaces.
// Limitation: the start vector must have a component along the extreme eigenvectors (a random one
// does, with probability 1); an invariant subspace met early (β_j ≈ 0) ends the run with the exact
// eigenvalues of A on that subspace, reported through `invariant_subspace`.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "flashsinkhorn/optim/objective.hpp"

namespace flashsinkhorn::optim {

enum class lanczos_target {
  both,      // converge λ_min and λ_max
  smallest,  // converge λ_min only (saddle detection)
};

struct lanczos_options {
  int max_steps = 100;  // Krylov dimension k (capped at p); ≥ 1
  // Converged when the residual bound of each targeted Ritz pair is ≤ tolerance·max(|θ_min|, |θ_max|).
  // The eigenvalue error is at most the bound, and near bound²/gap for a separated eigenvalue.
  double tolerance = 1e-10;
  lanczos_target target = lanczos_target::both;
  // Stop as soon as θ_min < stop_below: λ_min < stop_below is then certain (interlacing) though θ_min
  // need not have converged. −∞ (the default) turns this off.
  double stop_below = -std::numeric_limits<double>::infinity();
  std::uint64_t seed = 0;     // the start vector is N(0, I) from this seed ...
  std::vector<double> start;  // ... unless given here (p values, not all zero)
  // With `start`: q₁ ∝ start/‖start‖ + start_noise·r/‖r‖, r ~ N(0, I) from `seed` (≥ 0; 0: start alone).
  // A little noise keeps a warm start (a previous Ritz vector) off an invariant subspace of A.
  double start_noise = 0;
};

struct lanczos_result {
  double lambda_min = 0;             // smallest Ritz value θ_min (≥ λ_min(A))
  double lambda_max = 0;             // largest Ritz value θ_max (≤ λ_max(A))
  std::vector<double> ritz_vector_min;  // y_min = Q s_min, unit norm: y_minᵀ A y_min = θ_min
  double residual_min = 0;           // ‖A y_min − θ_min y_min‖₂ (the bound β_j|e_jᵀ s_min|)
  double residual_max = 0;           // same for θ_max
  int steps = 0;                     // products A·v made
  bool converged = false;            // the tolerance test passed
  bool stopped_below = false;        // ended by stop_below
  bool invariant_subspace = false;   // β_j ≈ 0 before p steps: the Krylov space is invariant under A
};

// Throws invalid_argument for p < 1, an empty operator or bad options.
[[nodiscard]] lanczos_result lanczos_extremes(const symmetric_operator& apply, int dimension,
                                              const lanczos_options& options = {});

}  // namespace flashsinkhorn::optim
