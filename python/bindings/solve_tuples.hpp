// A solve's results as the tuples the package unpacks, preceded by the Solver object that owns the
// solver in the combined calls (new_solved, new_solved_into and the C entry of solve_into_entry.cpp).
// Each solve releases the GIL while it runs.
#pragma once

#include <nanobind/nanobind.h>

#include "arrays.hpp"
#include "flashsinkhorn/flashsinkhorn.hpp"

namespace flashsinkhorn::python {

// The solve and everything the Python result needs, in one call: (cost, primal_cost,
// relative_entropy, iterations, marginal_error, converged, eps, device, total_seconds, f, g, f_aa,
// g_bb), f_aa and g_bb None unless `debiased`, preceded by `owner` when given (new_solved). NumPy
// callers (`dlpack` false) get the potentials as NumPy arrays of the working dtype and the cost as
// a float; torch callers (`dlpack` true) get the cost (0-d) and the potentials as host DLPack
// capsules of the working dtype, which torch._C._from_dlpack wraps.
nb::tuple solve_fields(solver& s, bool float32, bool debiased, bool dlpack, nb::handle owner = nb::handle());

// The arrays solver::solve_into writes in place: f (n,), g (m,), and f_aa (n,), g_bb (m,) when
// debiased, the value into the 0-d `cost`; f_aa, g_bb and cost may be absent (not present).
struct potential_arrays {
  array_argument f, g, f_aa, g_bb, cost;
};

// solve_into (solver.hpp) into `out` — CUDA memory stays there, so a caller on the GPU gets
// everything there without a fill of its own. Returns (iterations, marginal_error, converged, eps,
// device, total_seconds), preceded by `owner` when given (new_solved_into).
nb::tuple solve_into_arrays(solver& s, const potential_arrays& out, nb::handle owner = nb::handle());

}  // namespace flashsinkhorn::python
