#include "class_gaussians.hpp"

#include <omp.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace flashsinkhorn::cli {
namespace {

using row_major_matrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

Eigen::Map<const row_major_matrix> factor_of(const class_gaussian& g) {
  return {g.factor.data(), g.factor_rows, g.dim()};
}

Eigen::Map<const Eigen::VectorXd> mean_of(const class_gaussian& g) { return {g.mean.data(), g.dim()}; }

void require_same_dimension(const class_gaussian& a, const class_gaussian& b) {
  if (a.dim() != b.dim()) {
    throw std::invalid_argument("Gaussians of different dimensions (" + std::to_string(a.dim()) + " and " +
                                std::to_string(b.dim()) + ")");
  }
}

// F = Λ^½Vᵀ for Σ = VΛVᵀ, keeping the rows of eigenvalues above d·ε_mach·λ_max: the others are zero
// up to the eigensolver's rounding (≈ d·ε_mach·‖Σ‖), and their square roots (≈ √ε_mach·‖Σ‖^½ each)
// would otherwise add noise of relative size ~1e-8 to every cross term. FᵀF = Σ up to that rounding.
row_major_matrix root_factor(const Eigen::MatrixXd& covariance) {
  const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eigen(covariance);
  if (eigen.info() != Eigen::Success) throw std::runtime_error("the eigensolver failed on a class covariance");
  const Eigen::VectorXd& values = eigen.eigenvalues();  // increasing
  const double cutoff = static_cast<double>(values.size()) * std::numeric_limits<double>::epsilon() *
                        std::max(0.0, values.maxCoeff());
  Eigen::Index first = 0;
  while (first < values.size() && values[first] <= cutoff) ++first;
  const Eigen::Index kept = values.size() - first;
  const Eigen::VectorXd roots = values.tail(kept).cwiseSqrt();
  return roots.asDiagonal() * eigen.eigenvectors().rightCols(kept).transpose();
}

// The Helmert contrasts of the rows c_1..c_count of a centred sample, h_k = (c_1 + … + c_k − k·c_{k+1})/√(k(k+1)),
// k = 1..count−1: orthonormal combinations orthogonal to 1, so Σ_k h_k h_kᵀ = Σ_i c_i c_iᵀ with count − 1
// rows (the centred rows themselves would carry an exact null direction, 1ᵀC = 0, whose rounded
// singular value enters the cross term through a square root).
row_major_matrix helmert_rows(const row_major_matrix& centred) {
  const Eigen::Index count = centred.rows();
  row_major_matrix rows(count - 1, centred.cols());
  Eigen::RowVectorXd prefix = Eigen::RowVectorXd::Zero(centred.cols());
  for (Eigen::Index k = 1; k < count; ++k) {
    prefix += centred.row(k - 1);
    const auto kd = static_cast<double>(k);
    rows.row(k - 1) = (prefix - kd * centred.row(k)) / std::sqrt(kd * (kd + 1));
  }
  return rows;
}

// tr (Σ^½ Σ' Σ^½)^½ = ‖F F'ᵀ‖_* = Σ_k √λ_k(G Gᵀ) on the smaller side of G = F F'ᵀ.
double bures_cross_term(const class_gaussian& a, const class_gaussian& b) {
  row_major_matrix product = factor_of(a) * factor_of(b).transpose();  // (k_a, k_b)
  if (product.rows() > product.cols()) product.transposeInPlace();
  if (product.size() == 0) return 0.0;  // a zero covariance
  Eigen::MatrixXd gram(product.rows(), product.rows());
  gram.setZero();
  gram.selfadjointView<Eigen::Lower>().rankUpdate(product);
  const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eigen(gram, Eigen::EigenvaluesOnly);
  if (eigen.info() != Eigen::Success) throw std::runtime_error("the eigensolver failed on a Bures cross term");
  return eigen.eigenvalues().cwiseMax(0.0).cwiseSqrt().sum();
}

double squared_w2(const class_gaussian& a, const class_gaussian& b) {
  const double means = (mean_of(a) - mean_of(b)).squaredNorm();
  const double traces = factor_of(a).squaredNorm() + factor_of(b).squaredNorm();  // tr FᵀF = ‖F‖²_F
  return std::max(0.0, means + traces - 2 * bures_cross_term(a, b));
}

}  // namespace

class_gaussian fit_gaussian(std::span<const double> samples, std::int64_t count, std::int64_t dim) {
  if (count < 2) {
    throw std::invalid_argument("an unbiased covariance needs at least 2 samples, got " + std::to_string(count));
  }
  if (static_cast<std::int64_t>(samples.size()) != count * dim) {
    throw std::invalid_argument("fit_gaussian: " + std::to_string(samples.size()) + " values for " +
                                std::to_string(count) + " samples of dimension " + std::to_string(dim));
  }
  const Eigen::Map<const row_major_matrix> x(samples.data(), count, dim);
  const Eigen::VectorXd mean = x.colwise().mean().transpose();
  // A = (x_i − μ)/√(count − 1): AᵀA is the unbiased covariance.
  const row_major_matrix centred =
      (x.rowwise() - mean.transpose()) / std::sqrt(static_cast<double>(count - 1));
  class_gaussian g;
  g.count = count;
  g.mean.assign(mean.data(), mean.data() + dim);
  if (count - 1 <= dim) {
    const row_major_matrix factor = helmert_rows(centred);
    g.factor_rows = count - 1;
    g.factor.assign(factor.data(), factor.data() + factor.size());
    return g;
  }
  Eigen::MatrixXd covariance(dim, dim);
  covariance.setZero();
  covariance.selfadjointView<Eigen::Lower>().rankUpdate(centred.transpose());
  const row_major_matrix factor = root_factor(covariance);  // the eigensolver reads the lower triangle
  g.factor_rows = factor.rows();
  g.factor.assign(factor.data(), factor.data() + factor.size());
  return g;
}

class_gaussian gaussian_from_covariance(std::span<const double> mean, std::span<const double> covariance) {
  const auto dim = static_cast<std::int64_t>(mean.size());
  if (static_cast<std::int64_t>(covariance.size()) != dim * dim) {
    throw std::invalid_argument("gaussian_from_covariance: a covariance of " + std::to_string(covariance.size()) +
                                " values for dimension " + std::to_string(dim));
  }
  const Eigen::Map<const row_major_matrix> sigma(covariance.data(), dim, dim);
  const row_major_matrix factor = root_factor(Eigen::MatrixXd(sigma));
  class_gaussian g;
  g.mean.assign(mean.begin(), mean.end());
  g.factor_rows = factor.rows();
  g.factor.assign(factor.data(), factor.data() + factor.size());
  return g;
}

std::vector<double> covariance_of(const class_gaussian& g) {
  const row_major_matrix sigma = factor_of(g).transpose() * factor_of(g);
  return {sigma.data(), sigma.data() + sigma.size()};
}

double squared_w2_gaussians(const class_gaussian& a, const class_gaussian& b) {
  require_same_dimension(a, b);
  return squared_w2(a, b);
}

std::vector<double> squared_w2_label_distances(const std::vector<class_gaussian>& classes, int threads,
                                               const distance_progress& on_progress) {
  const auto label_count = static_cast<std::int64_t>(classes.size());
  for (const class_gaussian& g : classes) require_same_dimension(classes.front(), g);
  std::vector<std::pair<std::int64_t, std::int64_t>> pairs;
  for (std::int64_t i = 0; i < label_count; ++i) {
    for (std::int64_t j = i + 1; j < label_count; ++j) pairs.emplace_back(i, j);
  }
  const auto total = static_cast<int>(pairs.size());
  const int thread_count = threads > 0 ? threads : omp_get_max_threads();
  std::vector<double> distances(static_cast<std::size_t>(label_count * label_count), 0.0);
  int done = 0;
  std::string failure;
  // Inside the loop Eigen runs single-threaded (it detects the enclosing OpenMP region).
#pragma omp parallel for schedule(dynamic, 1) num_threads(thread_count)
  for (std::size_t k = 0; k < pairs.size(); ++k) {
    const auto [i, j] = pairs[k];
    try {
      const double w = squared_w2(classes[static_cast<std::size_t>(i)], classes[static_cast<std::size_t>(j)]);
      distances[static_cast<std::size_t>(i * label_count + j)] = w;
      distances[static_cast<std::size_t>(j * label_count + i)] = w;
    } catch (const std::exception& e) {
#pragma omp critical(flashsinkhorn_cli_label_distance_failure)
      failure = e.what();
    }
#pragma omp critical(flashsinkhorn_cli_label_distance_progress)
    {
      ++done;
      if (on_progress) on_progress(done, total);
    }
  }
  if (!failure.empty()) throw std::runtime_error(failure);
  return distances;
}

}  // namespace flashsinkhorn::cli
