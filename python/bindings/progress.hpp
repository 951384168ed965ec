// A solve's progress for Python (progress.cpp): flashsinkhorn::progress as _core.Progress, and
// options::on_progress from a Python callable.
#pragma once

#include <nanobind/nanobind.h>

namespace flashsinkhorn::python {

// _core.Progress (read-only fields of options.hpp's progress) and
// _core.with_progress(options, callable) → a copy of the options that calls callable(Progress) at
// every convergence check and once at the end of each solve (None: a copy without a callback).
void bind_progress(nanobind::module_& m);

}  // namespace flashsinkhorn::python
