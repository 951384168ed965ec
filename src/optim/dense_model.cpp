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
  h = (0.5 * (h + h.transpose())).eval();
  const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> solver(h, Eigen::ComputeEigenvectors);
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
  return form_dense_model_in_basis(hessian, size, {}, {});
}

dense_model form_dense_model_in_basis(const hessian_product& hessian, int size, std::vector<host_vector> basis,
                                      std::vector<host_vector> products) {
  const auto p = static_cast<std::size_t>(size);
  for (std::size_t i = 0; i < p && basis.size() < p; ++i) {  // complete Q by Gram–Schmidt (twice) on e_i
    host_vector v(p, 0.0);
    v[i] = 1;
    for (int pass = 0; pass < 2; ++pass)
      for (const host_vector& q : basis) axpy(-dot(q, v), q, v);
    const double length = norm2(v);
    if (length < 1e-6) continue;  // e_i lies in the span so far: a later one completes it
    scale(1 / length, v);
    host_vector w(p);
    hessian(v, w);
    basis.push_back(std::move(v));
    products.push_back(std::move(w));
  }
  std::vector<double> matrix(p * p, 0.0);  // H = Σ_j w_j q_jᵀ
  for (std::size_t j = 0; j < p; ++j)
    for (std::size_t r = 0; r < p; ++r)
      for (std::size_t c = 0; c < p; ++c) matrix[r * p + c] += products[j][r] * basis[j][c];
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
