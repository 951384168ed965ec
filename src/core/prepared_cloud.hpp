// A point cloud as the kernels see it, produced once per solver on the host in float64 and then
// converted by each backend to its working type:
//   points    (count, dim)  centred by the joint weighted mean μ = ½(Σ a_i x_i + Σ b_j y_j)
//                           (C is translation invariant), row-normalised for the cosine cost;
//   log_weights (count,)    log of the weights, −∞ where a weight is 0;
//   weights     (count,)    the weights, normalised to sum 1 unless options::normalize_weights is off.
// Rounding to TF32/BF16 and the squared norms are the backend's job: the norms must come from the
// same rounded values the dot products see.
#pragma once

#include <cstdint>
#include <vector>

namespace flashsinkhorn::detail {

struct prepared_cloud {
  std::int64_t count = 0;
  std::int64_t dim = 0;
  std::vector<double> points;       // (count, dim) row-major
  std::vector<double> weights;      // (count,)
  std::vector<double> log_weights;  // (count,)
};

// What every backend is constructed from.
struct prepared_problem {
  prepared_cloud x;
  prepared_cloud y;
  double cost_scale = 1;  // s, already 0.5 for the cosine cost
};

}  // namespace flashsinkhorn::detail
