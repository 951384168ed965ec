// The device side of a point gradient (backend.hpp, point_gradient_request), after the plan pass
// has left lse and Σ_j softmax_ij q_j ("weighted") on the device: the epilogue that turns them into
// the gradient, and the copy of a float64 device matrix into a caller's device view.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "flashsinkhorn/array_view.hpp"

namespace flashsinkhorn::detail {

struct point_gradient_epilogue_args {
  double* gradient = nullptr;        // (rows, dim) float64, written or added to
  const void* points = nullptr;      // the rows' exact points: float, or double when points_are_double
  bool points_are_double = false;
  std::int64_t points_stride = 0;    // elements between rows of `points`
  const double* weighted = nullptr;  // (rows, dim)
  const double* lse = nullptr;       // (rows,)
  const double* weights = nullptr;   // (rows,)
  const double* potential = nullptr;  // (rows,) the row potential (read when unbalanced)
  std::int64_t rows = 0;
  std::int64_t dim = 0;
  double eps = 1;
  bool unbalanced = false;
  double coefficient = 1;
  bool accumulate = false;
};

// gradient_ic (+)= coefficient · m_i · (p_ic − weighted_ic)  (math/point_gradient.hpp)
cudaError_t launch_point_gradient_epilogue(const point_gradient_epilogue_args& args, cudaStream_t stream);

// out[r, c] = source[r·source_stride + c] for the out.rows × out.cols of a device view `out`,
// converted to its dtype.
cudaError_t launch_copy_to_view(const mutable_matrix_view& out, const double* source, std::int64_t source_stride,
                                cudaStream_t stream);

}  // namespace flashsinkhorn::detail
