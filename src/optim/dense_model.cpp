#include "optim/dense_model.hpp"

#include <Eigen/Dense>
#include <cmath>
#include <cstddef>
#include <string>
#include <utility>

#include "flashsinkhorn/error.hpp"

namespace flashsinkhorn::optim::detail {
namespace {

using row_major = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// Eigendecomposition of the symmetric part of `hessian` (which it becomes).
dense_model decompose(std::vector<double> hessian, int size) {
  Eigen::Map<row_major> h(hessian.data(), size, size);
  const row_major symmetric = 0.5 * (h + h.transpose());
  h = symmetric;
  const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> solver(Eigen::MatrixXd(symmetric), Eigen::ComputeEigenvectors);
  if (solver.info() != Eigen::Success) throw error("dense model Hessian: the eigensolver did not converge");
  dense_model model;
  model.size = size;
  model.hessian = std::move(hessian);
  model.eigenvalues.assign(solver.eigenvalues().data(), solver.eigenvalues().data() + size);
  const Eigen::MatrixXd& q = solver.eigenvectors();  // column-major
  model.eigenvectors.assign(q.data(), q.data() + static_cast<std::ptrdiff_t>(size) * size);
  return model;
}

}  // namespace

const_span dense_model::eigenvector(int k) const {
  return const_span(eigenvectors).subspan(static_cast<std::size_t>(k) * static_cast<std::size_t>(size),
                                          static_cast<std::size_t>(size));
}

dense_model form_dense_model(const hessian_product& hessian, int size) {
  const auto p = static_cast<std::size_t>(size);
  std::vector<double> matrix(p * p);
  host_vector unit(p, 0.0), column(p);
  for (std::size_t i = 0; i < p; ++i) {
    unit[i] = 1;
    hessian(unit, column);
    unit[i] = 0;
    for (std::size_t r = 0; r < p; ++r) matrix[r * p + i] = column[r];  // column i of M
  }
  for (double entry : matrix)
    if (!std::isfinite(entry)) throw error("dense model Hessian: a Hessian-vector product is not finite");
  return decompose(std::move(matrix), size);
}

dense_model dense_model_of(std::vector<double> hessian, int size, const char* field) {
  const std::size_t want = static_cast<std::size_t>(size) * static_cast<std::size_t>(size);
  if (hessian.size() != want)
    throw invalid_argument(std::string(field) + ": " + std::to_string(hessian.size()) + " entries for a " +
                           std::to_string(size) + "×" + std::to_string(size) + " Hessian");
  for (double entry : hessian)
    if (!std::isfinite(entry)) throw invalid_argument(std::string(field) + ": an entry is not finite");
  return decompose(std::move(hessian), size);
}

}  // namespace flashsinkhorn::optim::detail
