#include "views.hpp"

#include <string>

#include "flashsinkhorn/error.hpp"

namespace flashsinkhorn::python {
namespace {

dtype element_type(nb::dlpack::dtype type, const char* name) {
  if (type == nb::dtype<float>()) return dtype::float32;
  if (type == nb::dtype<double>()) return dtype::float64;
  throw invalid_argument(std::string(name) + " must hold float32 or float64 values");
}

struct placement {
  memory_space space;
  int device;
};

placement where(int device_type, int device_id, const char* name) {
  if (device_type == nb::device::cpu::value) return {memory_space::host, 0};
  if (device_type == nb::device::cuda::value) return {memory_space::cuda, device_id};
  throw unsupported(std::string(name) + " lives on a device that is neither the CPU nor a CUDA GPU (DLPack type " +
                    std::to_string(device_type) + ")");
}

// A row-major matrix needs unit column stride; a single column or a single row may carry any
// stride on the trivial axis (NumPy and PyTorch report arbitrary values there).
template <class Array>
void matrix_layout(const Array& array, const char* name, std::int64_t& rows, std::int64_t& cols,
                   std::int64_t& row_stride) {
  if (array.ndim() != 2) {
    throw invalid_argument(std::string(name) + " must be a 2-d array (points × dimension), got " +
                           std::to_string(array.ndim()) + " dimensions");
  }
  rows = static_cast<std::int64_t>(array.shape(0));
  cols = static_cast<std::int64_t>(array.shape(1));
  const std::int64_t col_stride = array.stride(1);
  row_stride = rows <= 1 ? cols : array.stride(0);
  if (cols > 1 && col_stride != 1) {
    throw invalid_argument(std::string(name) + " must have contiguous rows (column stride 1), got column stride " +
                           std::to_string(col_stride));
  }
  if (row_stride < cols) {
    throw invalid_argument(std::string(name) + ": row stride " + std::to_string(row_stride) +
                           " is smaller than the number of columns " + std::to_string(cols));
  }
}

template <class Array>
void vector_layout(const Array& array, const char* name, std::int64_t& size, std::int64_t& stride) {
  if (array.ndim() != 1) {
    throw invalid_argument(std::string(name) + " must be a 1-d array, got " + std::to_string(array.ndim()) +
                           " dimensions");
  }
  size = static_cast<std::int64_t>(array.shape(0));
  stride = size <= 1 ? 1 : array.stride(0);
  if (stride < 1) throw invalid_argument(std::string(name) + " must have a positive stride");
}

}  // namespace

namespace {

// Fills the fields every view has: data, dtype, memory space and device.
template <class View, class Array>
View described(View view, const Array& array, const char* name) {
  view.data = array.data();
  view.type = element_type(array.dtype(), name);
  const placement p = where(array.device_type(), array.device_id(), name);
  view.space = p.space;
  view.device = p.device;
  return view;
}

template <class View, class Array>
View matrix_of(const Array& array, const char* name) {
  View view;
  matrix_layout(array, name, view.rows, view.cols, view.row_stride);
  return described(view, array, name);
}

template <class View, class Array>
View vector_of(const Array& array, const char* name) {
  View view;
  vector_layout(array, name, view.size, view.stride);
  return described(view, array, name);
}

}  // namespace

matrix_view as_matrix(const input_array& array, const char* name) { return matrix_of<matrix_view>(array, name); }

mutable_matrix_view as_mutable_matrix(const output_array& array, const char* name) {
  return matrix_of<mutable_matrix_view>(array, name);
}

vector_view as_vector(const input_array& array, const char* name) { return vector_of<vector_view>(array, name); }

mutable_vector_view as_mutable_vector(const output_array& array, const char* name) {
  return vector_of<mutable_vector_view>(array, name);
}

}  // namespace flashsinkhorn::python
