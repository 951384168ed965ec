// A loss of points seen as a function of a linear map: the parameterisation of shuffled regression
// and registration (SPEC §1, "chain rule to parameters"). For points Z = X W, X (n × d_in) fixed,
// W (d_in × d_out) the parameter (row-major, p = d_in·d_out):
//   L(W) = ℓ(XW),   ∇_W L = Xᵀ ∇_Z ℓ(XW),   ∇²_W L · V = Xᵀ (∇²_Z ℓ(XW) · (X V)).
// ℓ is an objective of the points (p = n·d_out, row-major), such as OT_ε(Z, Y) with the streamed
// gradient and Hessian-vector product w.r.t. the points. An affine map is X with a column of ones.
#pragma once

#include <vector>

#include "flashsinkhorn/optim/objective.hpp"

namespace flashsinkhorn::optim {

// x: n × d_in row-major (copied into the returned objective). Throws invalid_argument for a shape
// mismatch or an empty gradient callback of points_loss; value and hvp follow points_loss (empty stays
// empty).
[[nodiscard]] objective linear_map_objective(objective points_loss, std::vector<double> x, int n, int d_in,
                                             int d_out);

}  // namespace flashsinkhorn::optim
