#pragma once

#include <nanobind/nanobind.h>

namespace flashsinkhorn::python {

// Creates flashsinkhorn.{Error, InvalidArgument, Unsupported, CudaError, OutOfMemory} on `module`
// and translates the C++ exceptions of error.hpp into them, keeping the C++ message.
// Also flashsinkhorn.StopOptimization, translated from optim::stop_requested.
void register_errors(nanobind::module_& module);

// Whether a Python error raised in a callback is flashsinkhorn.StopOptimization (or a subclass).
bool is_stop_optimization(nanobind::python_error& e);

}  // namespace flashsinkhorn::python
