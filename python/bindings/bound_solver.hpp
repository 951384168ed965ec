// A solver as the binding holds it: the solver and the arrays it reads (solver.hpp: its views must
// outlive it), built on arguments already converted (arrays.hpp). _core.new_solver and the C entry
// of solve_into_entry.cpp both build their solver here.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <utility>

#include "arrays.hpp"
#include "flashsinkhorn/flashsinkhorn.hpp"

namespace flashsinkhorn::python {

// The label cost's arrays (label_cost.hpp) as the binding holds them: int32 labels read in place
// (the package passes contiguous int32 NumPy arrays) and W as any matrix argument.
using label_array = nb::ndarray<const std::int32_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
struct bound_labels {
  label_array x_labels, y_labels;
  array_argument distances;
};

// The solver plus the arguments it reads from; a, b, initial_f, initial_g are optional (present or
// not). `impl` is empty until owned_solver builds it.
struct bound_solver {
  array_argument x, y, a, b, initial_f, initial_g;
  std::optional<bound_labels> labels;
  std::optional<solver> impl;

  solver& get() { return *impl; }
};

// The problem whose views point into held's arrays (the present ones), without labels: memory that
// moving `held` does not move. Throws invalid_argument naming an array of the wrong shape.
problem problem_of(const bound_solver& held, double eps, double cost_scale);

// Builds held's solver on `p` (views into held's arrays) with the GIL released, and hands `held` to
// Python: returns the Solver object that owns it, and the solver inside. `cuda_stream`: the caller's
// stream for CUDA inputs (options::cuda_stream; a copy of the package's cached options only for
// calls that pass one). A bad input throws the library's exception before any Python object exists.
std::pair<nb::object, solver*> owned_solver(std::unique_ptr<bound_solver> held, const problem& p,
                                            const options& shared_options, std::optional<std::uintptr_t> cuda_stream);

}  // namespace flashsinkhorn::python
