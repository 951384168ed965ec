// Dense float64 row-major matrices held where a backend computes — device memory on the CUDA
// backend (cuda/device_matrix_store.hpp), host vectors otherwise (core/host_matrix_store.hpp) — and
// the few operations the Hessian-vector product (core/joint_hvp.cpp) does on them: its O(n·d)
// arrays stay beside the passes, and only O(n) vectors (row dot products, ρ, δ, the plan's row
// masses) cross to the host. On the GPU the arrays on the host cost more than the passes: every
// 5 MB host array of a 10,000 × 64 product page-faulted for ~1 ms on first touch, and each pass
// with 64 value columns copied 10 MB through pageable memory (docs/cuda_backend.md).
//
// Matrices are named by small integers the caller chooses; writing a name again replaces it (a
// store may keep the memory for the next matrix of that name). Column ranges [column, column +
// width) select blocks of a matrix, so that one pass's values or results may be several blocks.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/backend.hpp"
#include "flashsinkhorn/array_view.hpp"

namespace flashsinkhorn::detail {

// One term of matrix_store::combine: scale · diag(row_scale) · source[:, column : column + width].
struct matrix_term {
  int source = 0;
  std::int64_t column = 0;
  const std::vector<double>* row_scale = nullptr;  // (rows,); nullptr: 1
  double scale = 1;
};

class matrix_store {
 public:
  virtual ~matrix_store() = default;

  // Matrix `id` := `values` (rows, cols) row-major, or zeros when `values` is empty.
  virtual void write(int id, const std::vector<double>& values, std::int64_t rows, std::int64_t cols) = 0;
  // Matrix `id` := the caller's view (float32 or float64; host memory, or on the CUDA backend its
  // GPU's memory too), as float64. The shape is the view's; `name` goes into error messages.
  virtual void write_view(int id, const matrix_view& view, const std::string& name) = 0;
  // The caller's view := matrix `id` (the view's dtype and row stride, shape checked by the caller).
  virtual void read_into(int id, const mutable_matrix_view& out, const std::string& name) const = 0;
  // The first flat index of matrix `id` whose value is not finite, −1 when all are.
  [[nodiscard]] virtual std::int64_t first_nonfinite(int id) const = 0;
  // Matrix `id` := the prepared points of side `s` (count, dim) as the passes' operands hold them
  // (rounded to the precision mode, core/operand_rounding.hpp).
  virtual void load_points(int id, side s) = 0;
  // Matrix `id` rounded in place to the precision mode's operands (core/operand_rounding.hpp).
  virtual void round_to_operands(int id) = 0;
  [[nodiscard]] virtual std::vector<double> read(int id) const = 0;
  // Column `column` of matrix `id`, to the host.
  [[nodiscard]] virtual std::vector<double> column(int id, std::int64_t column) const = 0;
  [[nodiscard]] virtual std::int64_t rows(int id) const = 0;
  [[nodiscard]] virtual std::int64_t cols(int id) const = 0;

  // target[i, column + c] = (accumulate ? target[i, column + c] : 0)
  //                         + Σ_t terms[t].scale · row_scale_t[i] · source_t[i, column_t + c],  c < width,
  // for every row i of `target` (which exists; every source has its rows). A source may be the
  // target (each element is read before it is written).
  virtual void combine(int target, std::int64_t column, std::int64_t width, bool accumulate,
                       const std::vector<matrix_term>& terms) = 0;

  // d_i = Σ_{c < width} a[i, a_column + c] · b[i, b_column + c], to the host.
  [[nodiscard]] virtual std::vector<double> row_dots(int a, std::int64_t a_column, int b, std::int64_t b_column,
                                                     std::int64_t width) const = 0;

  // The plan pass of `request` (backend.hpp; its values and k are ignored) with V = matrix
  // `values` (keys count, k): matrix `out` := weighted (rows count, k).
  virtual void plan_rows(const plan_rows_request& request, int values, int out) = 0;

  // The quadratic pass of `request` (its pointers and k are ignored) with u = `directions` (rows
  // count, dim), V = `values` (keys count, k) and z = `key_directions` (keys count, dim; < 0: the
  // keys' points): matrix `out` := weighted (rows count, k). Fused; a caller that needs the generic
  // pass (two_gemm_path::plan_pass, or key directions on a backend without them) reads the matrices
  // and runs core/plan_quadratic_generic.hpp.
  virtual void plan_quadratic_rows(const plan_quadratic_request& request, int directions, int values,
                                   int key_directions, int out) = 0;
};

}  // namespace flashsinkhorn::detail
