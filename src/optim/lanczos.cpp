// Lanczos with full reorthogonalisation; the algorithm and its bounds are in
// include/flashsinkhorn/optim/lanczos.hpp.
#include "flashsinkhorn/optim/lanczos.hpp"

#include <Eigen/Eigenvalues>
#include <algorithm>
#include <cmath>
#include <random>

#include "flashsinkhorn/error.hpp"
#include "optim/lanczos_start.hpp"
#include "optim/validate_options.hpp"
#include "optim/vector_ops.hpp"

namespace flashsinkhorn::optim {
namespace {

// β_j below this fraction of the spectral estimate max|θ| means A Q_j ⊂ span(Q_j) to roundoff.
constexpr double kInvariantSubspace = 1e-13;

detail::host_vector unit_gaussian_vector(std::uint64_t seed, int dimension) {
  detail::host_vector r(static_cast<std::size_t>(dimension));
  std::mt19937_64 generator(seed);
  std::normal_distribution<double> normal;
  for (double& ri : r) ri = normal(generator);
  detail::scale(1 / detail::norm2(r), r);
  return r;
}

// w ← w − Q(Qᵀw), twice (CGS2). Returns the coefficient of the last basis vector removed in total
// (the roundoff correction of α_j).
double reorthogonalise(const std::vector<detail::host_vector>& basis, detail::host_vector& w) {
  double last_coefficient = 0;
  for (int pass = 0; pass < 2; ++pass) {
    for (std::size_t i = 0; i < basis.size(); ++i) {
      const double c = detail::dot(basis[i], w);
      detail::axpy(-c, basis[i], w);
      if (i + 1 == basis.size()) last_coefficient += c;
    }
  }
  return last_coefficient;
}

}  // namespace

// q₁: the random start, or the given one plus start_noise times a random unit vector (lanczos.hpp).
detail::host_vector detail::lanczos_start_vector(const lanczos_options& options, int dimension) {
  if (options.start.empty()) return unit_gaussian_vector(options.seed, dimension);
  detail::host_vector q(options.start);
  detail::scale(1 / detail::norm2(q), q);
  if (options.start_noise > 0) detail::axpy(options.start_noise, unit_gaussian_vector(options.seed, dimension), q);
  detail::scale(1 / detail::norm2(q), q);
  return q;
}

lanczos_result lanczos_extremes(const symmetric_operator& apply, int dimension, const lanczos_options& options) {
  detail::validate(options, dimension);
  if (!apply) throw invalid_argument("lanczos_extremes: the operator is empty");
  const auto p = static_cast<std::size_t>(dimension);
  const int max_steps = std::min(options.max_steps, dimension);

  std::vector<detail::host_vector> basis;  // q_1 … q_j, each (p,)
  std::vector<double> alpha;               // diagonal of T_j
  std::vector<double> beta;                // sub-diagonal of T_j, then β_j
  detail::host_vector q = detail::lanczos_start_vector(options, dimension);
  detail::host_vector w(p);
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> ritz;

  lanczos_result result;
  for (int j = 0;; ++j) {
    basis.push_back(q);
    apply(basis.back(), w);
    ++result.steps;
    // w = A q_j − α_j q_j − β_{j−1} q_{j−1}, then made orthogonal to every q_i.
    double alpha_j = detail::dot(basis.back(), w);
    detail::axpy(-alpha_j, basis.back(), w);
    if (j > 0) detail::axpy(-beta.back(), basis[basis.size() - 2], w);
    alpha_j += reorthogonalise(basis, w);
    alpha.push_back(alpha_j);
    const double beta_j = detail::norm2(w);

    // Ritz pairs of T_j (ascending): θ_min = first, θ_max = last; residual bounds β_j|e_jᵀ s|.
    const Eigen::Map<const Eigen::VectorXd> diagonal(alpha.data(), static_cast<Eigen::Index>(alpha.size()));
    const Eigen::Map<const Eigen::VectorXd> sub_diagonal(beta.data(), static_cast<Eigen::Index>(beta.size()));
    ritz.computeFromTridiagonal(diagonal, sub_diagonal, Eigen::ComputeEigenvectors);
    const Eigen::Index last = static_cast<Eigen::Index>(alpha.size()) - 1;
    result.lambda_min = ritz.eigenvalues()(0);
    result.lambda_max = ritz.eigenvalues()(last);
    result.residual_min = beta_j * std::fabs(ritz.eigenvectors()(last, 0));
    result.residual_max = beta_j * std::fabs(ritz.eigenvectors()(last, last));
    const double spectral_scale = std::max(std::fabs(result.lambda_min), std::fabs(result.lambda_max));

    const bool min_converged = result.residual_min <= options.tolerance * spectral_scale;
    const bool max_converged = result.residual_max <= options.tolerance * spectral_scale;
    result.converged = min_converged && (options.target == lanczos_target::smallest || max_converged);
    result.stopped_below = result.lambda_min < options.stop_below;
    result.invariant_subspace = beta_j <= kInvariantSubspace * spectral_scale && j + 1 < dimension;
    if (result.converged || result.stopped_below || result.invariant_subspace || j + 1 == max_steps) break;

    beta.push_back(beta_j);
    q = w;
    detail::scale(1 / beta_j, q);
  }

  // y_min = Q_j s_min.
  result.ritz_vector_min.assign(p, 0);
  for (std::size_t i = 0; i < basis.size(); ++i) {
    detail::axpy(ritz.eigenvectors()(static_cast<Eigen::Index>(i), 0), basis[i], result.ritz_vector_min);
  }
  return result;
}

}  // namespace flashsinkhorn::optim
