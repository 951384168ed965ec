#include "progress.hpp"

#include <memory>
#include <utility>

#include "flashsinkhorn/error.hpp"
#include "flashsinkhorn/options.hpp"

namespace flashsinkhorn::python {
namespace {

namespace nb = nanobind;
using namespace nb::literals;

// The callable behind a shared pointer: solves run with the GIL released and copy their options
// (and so on_progress) there, which must not touch a Python reference count; the last copy lets go
// of the callable under the GIL.
std::shared_ptr<nb::object> held(nb::object callable) {
  return {new nb::object(std::move(callable)), [](nb::object* object) {
            nb::gil_scoped_acquire locked;
            delete object;
          }};
}

// options with on_progress calling `callback(Progress)` under the GIL. A pending signal (Ctrl-C) is
// raised there first, so a solve that reports progress can be interrupted at its next check; what the
// callback raises ends the solve and reaches the caller unchanged.
options with_progress(const options& base, nb::object callback) {
  options out = base;
  if (callback.is_none()) {
    out.on_progress = nullptr;
    return out;
  }
  if (PyCallable_Check(callback.ptr()) == 0) {
    throw invalid_argument("progress must be a callable taking a flashsinkhorn.Progress, True or None, got " +
                           std::string(nb::str(nb::type_name(callback.type())).c_str()));
  }
  std::shared_ptr<nb::object> function = held(std::move(callback));
  out.on_progress = [function](const progress& step) {
    nb::gil_scoped_acquire locked;
    if (PyErr_CheckSignals() != 0) throw nb::python_error();
    (*function)(step);
  };
  return out;
}

}  // namespace

void bind_progress(nb::module_& m) {
  nb::class_<progress>(m, "Progress",
                       "A solve's progress (flashsinkhorn::progress, options.hpp): reported every check_every "
                       "iterations at the target eps and once at the end (finished = True).")
      .def_ro("iteration", &progress::iteration, "iterations done, the ε-schedule's included")
      .def_ro("max_iterations", &progress::max_iterations, "the schedule's length plus iters")
      .def_ro("eps", &progress::eps)
      .def_ro("marginal_error", &progress::marginal_error, "the L1 marginal error at this check")
      .def_ro("elapsed_seconds", &progress::elapsed_seconds)
      .def_ro("finished", &progress::finished)
      .def("__repr__", [](const progress& p) {
        return nb::str("Progress(iteration={}/{}, eps={:.4g}, marginal_error={:.3e}, elapsed_seconds={:.3f}{})")
            .format(p.iteration, p.max_iterations, p.eps, p.marginal_error, p.elapsed_seconds,
                    p.finished ? ", finished" : "");
      });
  m.def("with_progress", &with_progress, "options"_a, "callback"_a.none(),
        "A copy of `options` whose solves call callback(Progress) at every convergence check and at the end "
        "(None: without a callback). Pending signals are raised at each check; what the callback raises "
        "ends the solve.");
}

}  // namespace flashsinkhorn::python
