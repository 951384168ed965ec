// The label-augmented cost of dataset distances (OTDD, Alvarez-Melis & Fusi 2020):
//   C_ij = s·(λx‖x_i − y_j‖² + λy·W[l_i, l_j])
// with an integer label l_i ∈ [0, L) on every point and a small L×L label distance matrix W
// (symmetric, zero diagonal, ≥ 0; L up to a few hundred). OTDD uses s = ½, λx = λy = 1 and W = the
// squared 2-Wasserstein distances between the class-conditional Gaussians.
// How the solver evaluates it without a lookup in the tile loop: src/core/label_embedding.hpp.
#pragma once

#include <cstdint>

#include "flashsinkhorn/array_view.hpp"

namespace flashsinkhorn {

// `size` int32 labels, contiguous, in host memory.
struct label_view {
  const std::int32_t* data = nullptr;
  std::int64_t size = 0;

  [[nodiscard]] bool empty() const noexcept { return data == nullptr; }
};

[[nodiscard]] inline label_view host_labels(const std::int32_t* data, std::int64_t size) noexcept {
  return {data, size};
}

struct label_cost {
  label_view x_labels;           // (n,) l_i ∈ [0, L)
  label_view y_labels;           // (m,) l_j ∈ [0, L)
  matrix_view label_distances;   // W (L, L), host; symmetric to 1e-9·max|W| (then symmetrised)
  double feature_weight = 1.0;   // λx > 0
  double label_weight = 1.0;     // λy > 0

  // All three arrays empty: the plain cost s‖x_i − y_j‖².
  [[nodiscard]] bool empty() const noexcept {
    return x_labels.empty() && y_labels.empty() && label_distances.empty();
  }
};

}  // namespace flashsinkhorn
