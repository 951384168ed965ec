// The optimisers' part of flashsinkhorn._core (optim.cpp).
#pragma once

#include <nanobind/nanobind.h>

namespace nb = nanobind;

namespace flashsinkhorn::python {

void bind_optimizers(nb::module_& m);

}  // namespace flashsinkhorn::python
