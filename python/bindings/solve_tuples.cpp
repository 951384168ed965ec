#include "solve_tuples.hpp"

#include <nanobind/stl/string.h>  // result::device

#include <iterator>
#include <utility>
#include <vector>

namespace flashsinkhorn::python {
namespace {

// (owner, *fields) as one tuple, or the fields alone when `owner` is not given.
nb::tuple owned_tuple(nb::handle owner, nb::object* fields, std::size_t count) {
  const Py_ssize_t first = owner.is_valid() ? 1 : 0;
  nb::tuple out = nb::steal<nb::tuple>(PyTuple_New(first + static_cast<Py_ssize_t>(count)));
  if (!out.is_valid()) throw nb::python_error();
  if (first == 1) PyTuple_SET_ITEM(out.ptr(), 0, owner.inc_ref().ptr());
  for (std::size_t i = 0; i < count; ++i) {
    PyTuple_SET_ITEM(out.ptr(), first + static_cast<Py_ssize_t>(i), fields[i].release().ptr());
  }
  return out;
}

}  // namespace

nb::tuple solve_fields(solver& s, bool float32, bool debiased, bool dlpack, nb::handle owner) {
  result r;
  {
    nb::gil_scoped_release unlocked;
    r = s.solve();
  }
  // The potentials move into the arrays (no copy of n + m values after the solve).
  const auto vector = dlpack ? &dlpack_vector : &numpy_vector;
  nb::object fields[] = {dlpack ? dlpack_scalar(r.cost, float32) : nb::cast(r.cost),
                         nb::cast(r.primal_cost),
                         nb::cast(r.relative_entropy),
                         nb::cast(r.iterations),
                         nb::cast(r.marginal_error),
                         nb::cast(r.converged),
                         nb::cast(r.eps),
                         nb::cast(r.device),
                         nb::cast(r.time.total_seconds),
                         vector(std::move(r.f), float32),
                         vector(std::move(r.g), float32),
                         debiased ? vector(std::move(r.f_aa), float32) : nb::none(),
                         debiased ? vector(std::move(r.g_bb), float32) : nb::none()};
  return owned_tuple(owner, fields, std::size(fields));
}

nb::tuple solve_into_arrays(solver& s, const potential_arrays& out, nb::handle owner) {
  potential_views views;
  views.f = as_mutable_vector(out.f, "f");
  views.g = as_mutable_vector(out.g, "g");
  if (out.f_aa.present) views.f_aa = as_mutable_vector(out.f_aa, "f_aa");
  if (out.g_bb.present) views.g_bb = as_mutable_vector(out.g_bb, "g_bb");
  if (out.cost.present) views.cost = as_mutable_scalar(out.cost, "cost");
  result r;
  {
    nb::gil_scoped_release unlocked;
    r = s.solve_into(views);
  }
  nb::object fields[] = {nb::cast(r.iterations), nb::cast(r.marginal_error), nb::cast(r.converged), nb::cast(r.eps),
                         nb::cast(r.device), nb::cast(r.time.total_seconds)};
  return owned_tuple(owner, fields, std::size(fields));
}

}  // namespace flashsinkhorn::python
