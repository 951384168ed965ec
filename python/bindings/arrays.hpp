// Arrays in and out of the binding: Python objects → flashsinkhorn views (zero-copy whenever the
// core can read the memory in place), and result vectors → NumPy arrays or DLPack capsules.
//
// Inputs, in order of preference:
//   NumPy float32/float64 arrays      read in place through the NumPy C API (no DLPack capsule, no
//                                     buffer request): any row stride ≥ cols with unit column
//                                     stride, any positive vector stride.
//   a device address                  (tag, owner, address, shape, float32, device), `tag` the
//                                     module's DEVICE_ADDRESS: a C-contiguous CUDA tensor that the
//                                     package has checked (_arrays.core_array: float32/float64, no
//                                     negative bit), read or written in place through its address
//                                     while `owner` keeps it alive. No DLPack capsule is made: an
//                                     export and an import per tensor, five tensors per sinkhorn().
//                                     device −1: host memory. The tuple carries a
//                                     flashsinkhorn_raw_array (solve_into_entry.h), which
//                                     _torch_calls passes without any Python object through the
//                                     C entry _core._solve_into_entry (raw_argument below).
//   DLPack (a capsule from torch.utils.dlpack.to_dlpack, or any object with __dlpack__)
//                                     imported by nanobind, read in place on the host or a CUDA GPU.
//   anything else NumPy accepts       (lists, integer or float16 arrays, ...) converted by NumPy.
// A layout the core cannot read (column stride ≠ 1, overlapping rows, negative strides) is copied
// once, C-contiguous, on the host; other dtypes become float64 (float16 → float32). Every check
// raises flashsinkhorn::invalid_argument naming the argument, so Python sees
// flashsinkhorn.InvalidArgument exactly as for errors found by the library itself.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <cstdint>
#include <vector>

#include "flashsinkhorn/array_view.hpp"
#include "solve_into_entry.h"

namespace flashsinkhorn::python {

namespace nb = nanobind;

// An argument as the core will read it, and the references that keep that memory alive.
struct array_argument {
  nb::object owner;                   // the NumPy array read (the caller's, or the copy made here),
                                      // or the tensor of a device address
  nb::ndarray<nb::ro> dlpack_input;   // or the DLPack import of an input
  nb::ndarray<> dlpack_output;        // or the DLPack import of an output
  void* data = nullptr;
  dtype type = dtype::float64;
  memory_space space = memory_space::host;
  int device = 0;
  int ndim = 0;
  std::int64_t shape[2] = {0, 0};
  std::int64_t stride[2] = {0, 0};  // in elements
  bool present = false;  // false: an optional argument that was not given (None, or a raw owner NULL)
};

// Loads the NumPy C API; called once when the module is imported.
void init_numpy();

// The first item of a device address (the module's DEVICE_ADDRESS).
nb::object device_address_tag();

// `object` as an input the core reads (copied only where it must be, see above).
array_argument input_argument(nb::handle object, const char* name);
// `object` as an output the core writes in place (never copied: a layout or dtype the core cannot
// write raises).
array_argument output_argument(nb::handle object, const char* name);
// A raw description (solve_into_entry.h) as an input or output, read or written in place: C-contiguous
// strides, `owner` borrowed; not present when raw.owner is NULL. Checks nothing (as_matrix and the
// others do).
array_argument raw_argument(const flashsinkhorn_raw_array& raw);

// (rows, cols) float32/float64, unit column stride, any row stride ≥ cols.
matrix_view as_matrix(const array_argument& array, const char* name);
mutable_matrix_view as_mutable_matrix(const array_argument& array, const char* name);

// (size,) float32/float64, any positive stride.
vector_view as_vector(const array_argument& array, const char* name);
mutable_vector_view as_mutable_vector(const array_argument& array, const char* name);
// One element: a 0-d array, or a 1-d one of size 1.
mutable_vector_view as_mutable_scalar(const array_argument& array, const char* name);

// A NumPy array of `values`, float32 (rounded once) or float64, that owns the vector's buffer.
nb::object numpy_vector(std::vector<double>&& values, bool float32);

// The same as host DLPack capsules ("dltensor", unversioned: what torch._C._from_dlpack takes):
// the capsule owns the vector's buffer and hands it to the consumer, which frees it through the
// DLPack deleter; an unconsumed capsule frees it itself. Torch callers get their result tensors
// from these with no NumPy array in between (one DLPack import per tensor, the same torch code
// that to_dlpack's export of the inputs has just run).
nb::object dlpack_vector(std::vector<double>&& values, bool float32);
nb::object dlpack_scalar(double value, bool float32);

}  // namespace flashsinkhorn::python
