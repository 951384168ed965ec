#include "core/view_io.hpp"

#include <string>

#include "flashsinkhorn/error.hpp"

namespace flashsinkhorn::detail {
namespace {

void require_host(memory_space space, std::string_view name) {
  if (space != memory_space::host) {
    throw unsupported(std::string(name) +
                      " lives in CUDA memory; this operation reads and writes host arrays only (solver.hpp, \"CUDA inputs\", "
                      "lists the ones that take CUDA arrays)");
  }
}

template <class T, class Void>
void copy_rows(const basic_matrix_view<Void>& view, std::vector<double>& out) {
  const T* base = static_cast<const T*>(view.data);
  for (std::int64_t r = 0; r < view.rows; ++r) {
    for (std::int64_t c = 0; c < view.cols; ++c) out[r * view.cols + c] = static_cast<double>(base[r * view.row_stride + c]);
  }
}

}  // namespace

std::vector<double> read_matrix(const matrix_view& view, std::string_view name) {
  require_host(view.space, name);
  if (view.data == nullptr && view.rows * view.cols > 0) throw invalid_argument(std::string(name) + " has no data");
  if (view.rows < 0 || view.cols < 0) throw invalid_argument(std::string(name) + " has a negative dimension");
  if (view.row_stride < view.cols) {
    throw invalid_argument(std::string(name) + ": row_stride " + std::to_string(view.row_stride) +
                           " is smaller than the number of columns " + std::to_string(view.cols));
  }
  std::vector<double> out(static_cast<std::size_t>(view.rows * view.cols));
  if (view.type == dtype::float32) copy_rows<float>(view, out);
  else copy_rows<double>(view, out);
  return out;
}

std::vector<double> read_vector(const vector_view& view, std::string_view name) {
  require_host(view.space, name);
  if (view.data == nullptr && view.size > 0) throw invalid_argument(std::string(name) + " has no data");
  if (view.size < 0) throw invalid_argument(std::string(name) + " has a negative size");
  std::vector<double> out(static_cast<std::size_t>(view.size));
  for (std::int64_t i = 0; i < view.size; ++i) {
    out[i] = view.type == dtype::float32 ? static_cast<double>(static_cast<const float*>(view.data)[i * view.stride])
                                         : static_cast<const double*>(view.data)[i * view.stride];
  }
  return out;
}

void check_output_shape(const mutable_matrix_view& out, std::int64_t rows, std::int64_t cols, std::string_view name) {
  if (out.data == nullptr) throw invalid_argument(std::string(name) + ": output has no data");
  if (out.rows != rows || out.cols != cols) {
    std::string message(name);
    message.append(": output is ").append(std::to_string(out.rows)).append("×").append(std::to_string(out.cols));
    message.append(", expected ").append(std::to_string(rows)).append("×").append(std::to_string(cols));
    throw invalid_argument(message);
  }
  if (out.row_stride < cols) throw invalid_argument(std::string(name) + ": output row_stride is smaller than cols");
}

void write_leading_columns(const mutable_matrix_view& out, const std::vector<double>& values, std::int64_t rows,
                           std::int64_t stored_cols, std::string_view name) {
  require_host(out.space, name);
  if (out.cols > stored_cols) {
    throw invalid_argument(std::string(name) + ": output has " + std::to_string(out.cols) + " columns, at most " +
                           std::to_string(stored_cols) + " exist");
  }
  check_output_shape(out, rows, out.cols, name);
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t c = 0; c < out.cols; ++c) {
      const double v = values[r * stored_cols + c];
      if (out.type == dtype::float32) static_cast<float*>(out.data)[r * out.row_stride + c] = static_cast<float>(v);
      else static_cast<double*>(out.data)[r * out.row_stride + c] = v;
    }
  }
}

void write_matrix(const mutable_matrix_view& out, const std::vector<double>& values, std::int64_t rows,
                  std::int64_t cols, std::string_view name) {
  require_host(out.space, name);
  check_output_shape(out, rows, cols, name);
  write_leading_columns(out, values, rows, cols, name);
}

void write_vector(const mutable_vector_view& out, const std::vector<double>& values, std::string_view name) {
  require_host(out.space, name);
  if (out.data == nullptr) throw invalid_argument(std::string(name) + ": output has no data");
  if (out.size != static_cast<std::int64_t>(values.size())) {
    throw invalid_argument(std::string(name) + ": output has " + std::to_string(out.size) + " elements, expected " +
                           std::to_string(values.size()));
  }
  for (std::int64_t i = 0; i < out.size; ++i) {
    if (out.type == dtype::float32) static_cast<float*>(out.data)[i * out.stride] = static_cast<float>(values[i]);
    else static_cast<double*>(out.data)[i * out.stride] = values[i];
  }
}

}  // namespace flashsinkhorn::detail
