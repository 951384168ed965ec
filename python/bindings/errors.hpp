#pragma once

#include <nanobind/nanobind.h>

namespace flashsinkhorn::python {

// Creates flashsinkhorn.{Error, InvalidArgument, Unsupported, CudaError, OutOfMemory} on `module`
// and translates the C++ exceptions of error.hpp into them, keeping the C++ message.
void register_errors(nanobind::module_& module);

}  // namespace flashsinkhorn::python
