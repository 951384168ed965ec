// A point cloud as the kernels see it, produced once per solver on the host in float64 and then
// converted by each backend to its working type:
//   points    (count, dim)  centred by the joint weighted mean μ = ½(Σ a_i x_i + Σ b_j y_j)
//                           (C is translation invariant), row-normalised for the cosine cost; with
//                           a label cost, the features followed by the label coordinates
//                           (label_embedding.hpp), the negative-signature ones last;
//   key_points (count, dim) only when negative_dim > 0: η⊙p, the points in the keys' role (the last
//                           negative_dim coordinates negated), so that
//                           C_ij = s(‖p_i‖²_η + ‖q_j‖²_η − 2·p_i·(η⊙q_j));
//   log_weights (count,)    log of the weights, −∞ where a weight is 0;
//   weights     (count,)    the weights, normalised to sum 1 unless options::normalize_weights is off.
// Rounding to TF32/BF16 and the squared norms are the backend's job: the norms must come from the
// same rounded values the dot products see, with the signature: ‖p‖²_η = Σ_{k < dim − negative_dim} p_k²
// − Σ_{k ≥ dim − negative_dim} p_k² (signed_sq_norm below). A cloud plays the keys' role with
// key_role_points() — also when it is the rows at the same time (debiasing, OT(a, a)).
#pragma once

#include <cstdint>
#include <vector>

namespace flashsinkhorn::detail {

struct prepared_cloud {
  std::int64_t count = 0;
  std::int64_t dim = 0;
  std::int64_t negative_dim = 0;    // trailing coordinates with η = −1 (0: Euclidean)
  std::vector<double> points;       // (count, dim) row-major
  std::vector<double> key_points;   // (count, dim) η⊙points when negative_dim > 0, else empty
  std::vector<double> weights;      // (count,)
  std::vector<double> log_weights;  // (count,)

  [[nodiscard]] const std::vector<double>& key_role_points() const {
    return negative_dim > 0 ? key_points : points;
  }
};

// ‖v‖²_η of one point's `dim` (rounded) coordinates, the last `negative_dim` of signature −1, summed
// in double. T is the backend's working type.
template <class T>
[[nodiscard]] double signed_sq_norm(const T* v, std::int64_t dim, std::int64_t negative_dim) {
  double positive = 0, negative = 0;
  const std::int64_t first_negative = dim - negative_dim;
  for (std::int64_t k = 0; k < first_negative; ++k) positive += static_cast<double>(v[k]) * static_cast<double>(v[k]);
  for (std::int64_t k = first_negative; k < dim; ++k) negative += static_cast<double>(v[k]) * static_cast<double>(v[k]);
  return positive - negative;
}

// What every backend is constructed from.
struct prepared_problem {
  prepared_cloud x;
  prepared_cloud y;
  double cost_scale = 1;  // s, already 0.5 for the cosine cost, s·λx with a label cost
};

}  // namespace flashsinkhorn::detail
