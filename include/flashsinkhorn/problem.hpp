// What to solve: two weighted point clouds, the temperature ε, the cost scale s and, optionally,
// labels on the points with a label distance matrix (label_cost.hpp).
#pragma once

#include "flashsinkhorn/array_view.hpp"
#include "flashsinkhorn/label_cost.hpp"

namespace flashsinkhorn {

struct problem {
  matrix_view x;       // (n, d) source points
  matrix_view y;       // (m, d) target points
  vector_view a;       // (n,) source weights ≥ 0; empty view: uniform 1/n
  vector_view b;       // (m,) target weights ≥ 0; empty view: uniform 1/m
  double eps = 0.1;    // entropic temperature ε > 0 (the final one when ε-scaling is on)
  double cost_scale = 1.0;  // s in C_ij = s·‖x_i − y_j‖²  (0.5 is GeomLoss's p = 2 convention)

  // Empty: C_ij = s‖x_i − y_j‖². Set: C_ij = s·(λx‖x_i − y_j‖² + λy·W[l_i, l_j]) (squared-Euclidean
  // cost only; the cosine cost with labels is unsupported).
  label_cost labels;

  // Warm start: potentials (f on X, g on Y) from an earlier solve. Both or neither.
  vector_view initial_f;
  vector_view initial_g;
};

}  // namespace flashsinkhorn
