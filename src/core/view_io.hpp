// Reading the caller's views into float64 and writing results back, with the checks that belong
// to memory layout (null data, strides, memory space). Values are validated in validate.cpp.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "flashsinkhorn/array_view.hpp"

namespace flashsinkhorn::detail {

// (rows, cols) row-major copy. `name` appears in error messages ("X", "a", ...).
std::vector<double> read_matrix(const matrix_view& view, std::string_view name);
std::vector<double> read_vector(const vector_view& view, std::string_view name);

// Writes `values` ((rows, cols) row-major) into `out`, converting to its dtype.
void write_matrix(const mutable_matrix_view& out, const std::vector<double>& values, std::int64_t rows,
                  std::int64_t cols, std::string_view name);
// The same for the first out.cols of `stored_cols` columns of `values` (out.cols ≤ stored_cols).
void write_leading_columns(const mutable_matrix_view& out, const std::vector<double>& values, std::int64_t rows,
                           std::int64_t stored_cols, std::string_view name);

// The checks of an output view that do not depend on its memory space: data, shape (rows, cols),
// row stride. Throws invalid_argument naming `name`.
void check_output_shape(const mutable_matrix_view& out, std::int64_t rows, std::int64_t cols, std::string_view name);

void write_vector(const mutable_vector_view& out, const std::vector<double>& values, std::string_view name);

}  // namespace flashsinkhorn::detail
