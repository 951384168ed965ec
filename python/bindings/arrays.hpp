// DLPack arrays (NumPy, PyTorch, anything nanobind accepts) → flashsinkhorn views, without copying.
// Every check here raises flashsinkhorn::invalid_argument with the argument's name, so Python sees
// flashsinkhorn.InvalidArgument exactly as for errors found by the library itself.
#pragma once

#include <nanobind/ndarray.h>

#include "flashsinkhorn/array_view.hpp"

namespace flashsinkhorn::python {

namespace nb = nanobind;

using input_array = nb::ndarray<nb::ro>;  // any dtype, shape, strides, device: checked below
using output_array = nb::ndarray<>;

// (rows, cols) float32/float64, unit column stride, any row stride ≥ cols.
matrix_view as_matrix(const input_array& array, const char* name);
mutable_matrix_view as_mutable_matrix(const output_array& array, const char* name);

// (size,) float32/float64, any stride.
vector_view as_vector(const input_array& array, const char* name);
mutable_vector_view as_mutable_vector(const output_array& array, const char* name);

}  // namespace flashsinkhorn::python
