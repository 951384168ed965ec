#pragma once

#include <nanobind/nanobind.h>

#include <exception>

namespace flashsinkhorn::python {

// Creates flashsinkhorn.{Error, InvalidArgument, Unsupported, CudaError, OutOfMemory} on `module`
// and translates the C++ exceptions of error.hpp into them, keeping the C++ message.
// Also flashsinkhorn.StopOptimization, translated from optim::stop_requested.
void register_errors(nanobind::module_& module);

// Sets the Python error that a nanobind function of this module raises when it throws `thrown`
// (the translators above, then nanobind's own: nb::python_error restored, std::bad_alloc a
// MemoryError, ...), for code that nanobind does not wrap (the C entry of solve_into_entry.cpp). The
// caller returns NULL next. Costs a function object: for error paths only.
void set_python_error(std::exception_ptr thrown) noexcept;

// Whether a Python error raised in a callback is flashsinkhorn.StopOptimization (or a subclass).
bool is_stop_optimization(nanobind::python_error& e);

}  // namespace flashsinkhorn::python
