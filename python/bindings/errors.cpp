#include "errors.hpp"

#include "flashsinkhorn/error.hpp"
#include "flashsinkhorn/optim/objective.hpp"

namespace flashsinkhorn::python {
namespace {

namespace nb = nanobind;

// Owned by the module (module attributes keep them alive for the interpreter's lifetime).
PyObject* error_type = nullptr;           // flashsinkhorn.Error(RuntimeError): base of all
PyObject* invalid_argument_type = nullptr;  // (Error, ValueError)
PyObject* unsupported_type = nullptr;     // (Error, NotImplementedError)
PyObject* cuda_error_type = nullptr;      // (Error, RuntimeError)
PyObject* out_of_memory_type = nullptr;   // (Error, MemoryError)
PyObject* stop_optimization_type = nullptr;  // (Exception): a callback's request to end an optimiser run

PyObject* new_exception(nb::module_& module, const char* name, PyObject* base, PyObject* builtin, const char* doc) {
  const std::string qualified = std::string("flashsinkhorn.") + name;
  nb::object bases = builtin == nullptr ? nb::borrow(base) : nb::object(nb::make_tuple(nb::handle(base), nb::handle(builtin)));
  PyObject* type = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, bases.ptr(), nullptr);
  if (type == nullptr) throw nb::python_error();
  module.attr(name) = nb::handle(type);  // the module holds the reference
  Py_DECREF(type);
  return type;
}

}  // namespace

void register_errors(nb::module_& module) {
  error_type = new_exception(module, "Error", PyExc_RuntimeError, nullptr,
                             "Base class of every error raised by flashsinkhorn (a RuntimeError).");
  invalid_argument_type = new_exception(module, "InvalidArgument", error_type, PyExc_ValueError,
                                        "An argument is unusable: a NaN, a negative weight, mismatched shapes, eps <= 0 ...");
  unsupported_type = new_exception(module, "Unsupported", error_type, PyExc_NotImplementedError,
                                   "A feature or device is not available in this build or on this machine.");
  cuda_error_type = new_exception(module, "CudaError", error_type, PyExc_RuntimeError,
                                  "A CUDA runtime or driver call failed.");
  out_of_memory_type = new_exception(module, "OutOfMemory", error_type, PyExc_MemoryError,
                                     "The device (or host) ran out of memory.");

  stop_optimization_type = new_exception(
      module, "StopOptimization", PyExc_Exception, nullptr,
      "Raised by an optimiser's callback to end the run: it returns the last accepted iterate with status "
      "'stopped' and a state to resume from (a stop during the first evaluation passes through).");

  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const optim::stop_requested& e) {
      PyErr_SetString(stop_optimization_type, e.what());
    } catch (const invalid_argument& e) {
      PyErr_SetString(invalid_argument_type, e.what());
    } catch (const unsupported& e) {
      PyErr_SetString(unsupported_type, e.what());
    } catch (const cuda_error& e) {
      PyErr_SetString(cuda_error_type, e.what());
    } catch (const out_of_memory& e) {
      PyErr_SetString(out_of_memory_type, e.what());
    } catch (const error& e) {
      PyErr_SetString(error_type, e.what());
    }
  });
}

void set_python_error(std::exception_ptr thrown) noexcept {
  // nanobind has no public entry to its translation: a function of its own that rethrows gets it.
  try {
    const nb::object rethrow = nb::cpp_function([thrown] { std::rethrow_exception(thrown); });
    Py_XDECREF(PyObject_CallNoArgs(rethrow.ptr()));  // always null, with the translated error set
  } catch (nb::python_error& e) {
    e.restore();  // the function object could not be made
  } catch (...) {
    PyErr_SetString(PyExc_SystemError, "flashsinkhorn: an exception could not be translated into a Python error");
  }
}

bool is_stop_optimization(nb::python_error& e) { return e.matches(stop_optimization_type); }

}  // namespace flashsinkhorn::python
