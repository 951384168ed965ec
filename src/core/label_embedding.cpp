#include "core/label_embedding.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <string>

#include "flashsinkhorn/error.hpp"

namespace flashsinkhorn::detail {

label_embedding embed_label_distances(const std::vector<double>& distances, std::int64_t label_count) {
  using row_major = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const Eigen::Map<const row_major> w(distances.data(), label_count, label_count);
  // B = −½·J·W·J: B_ll' = −½(W_ll' − w̄_l − w̄_l' + w̄), w̄_l the row means (= column means, W symmetric).
  const Eigen::VectorXd row_mean = w.rowwise().mean();
  const double grand_mean = row_mean.mean();
  Eigen::MatrixXd gram(label_count, label_count);
  for (std::int64_t l = 0; l < label_count; ++l) {
    for (std::int64_t k = 0; k < label_count; ++k) {
      gram(l, k) = -0.5 * (w(l, k) - row_mean(l) - row_mean(k) + grand_mean);
    }
  }
  const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eigen(gram);
  if (eigen.info() != Eigen::Success) {
    throw error("the eigendecomposition of the label distance matrix (L = " + std::to_string(label_count) +
                ") did not converge");
  }
  const Eigen::VectorXd& lambda = eigen.eigenvalues();  // ascending
  const double largest = lambda.size() > 0 ? lambda.cwiseAbs().maxCoeff() : 0.0;
  const double cutoff = 1e-12 * largest;

  // Coordinates kept: positive eigenvalues, largest first, then the negative ones, most negative first.
  std::vector<std::int64_t> kept;
  for (std::int64_t k = label_count - 1; k >= 0; --k) {
    if (lambda(k) > cutoff) kept.push_back(k);
  }
  const auto positive = static_cast<std::int64_t>(kept.size());
  for (std::int64_t k = 0; k < label_count; ++k) {
    if (lambda(k) < -cutoff) kept.push_back(k);
  }

  label_embedding out;
  out.label_count = label_count;
  out.dim = static_cast<std::int64_t>(kept.size());
  out.negative_dim = out.dim - positive;
  out.coordinates.resize(static_cast<std::size_t>(label_count * out.dim));
  for (std::int64_t l = 0; l < label_count; ++l) {
    for (std::int64_t c = 0; c < out.dim; ++c) {
      const std::int64_t k = kept[static_cast<std::size_t>(c)];
      out.coordinates[l * out.dim + c] = eigen.eigenvectors()(l, k) * std::sqrt(std::abs(lambda(k)));
    }
  }
  return out;
}

std::vector<double> append_label_coordinates(const std::vector<double>& points, std::int64_t dim,
                                             const std::vector<std::int32_t>& labels,
                                             const label_embedding& embedding, double scale) {
  const auto count = static_cast<std::int64_t>(labels.size());
  const std::int64_t wide = dim + embedding.dim;
  std::vector<double> out(static_cast<std::size_t>(count * wide));
  for (std::int64_t i = 0; i < count; ++i) {
    std::copy_n(points.begin() + i * dim, dim, out.begin() + i * wide);
    const double* u = embedding.coordinates.data() + static_cast<std::int64_t>(labels[i]) * embedding.dim;
    for (std::int64_t c = 0; c < embedding.dim; ++c) out[i * wide + dim + c] = scale * u[c];
  }
  return out;
}

}  // namespace flashsinkhorn::detail
