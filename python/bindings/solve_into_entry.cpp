// The C entry of solve_into_entry.h: _core.new_solved_into for a caller that has raw arrays (torch's
// C++ tensors in _torch_calls). The same solver construction (owned_solver) and solve_into
// (solve_into_arrays) as the nanobind function; only the arguments arrive as C structs, and C++
// exceptions become Python errors here (no nanobind function wraps this one).
#include "solve_into_entry.hpp"

#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <utility>

#include "arrays.hpp"
#include "bound_solver.hpp"
#include "errors.hpp"
#include "solve_into_entry.h"
#include "solve_tuples.hpp"

namespace flashsinkhorn::python {
namespace {

namespace nb = nanobind;

PyObject* solve_into(const flashsinkhorn_solve_into_call* call) noexcept {
  try {
    const nb::handle options_object(call->options);
    if (!nb::isinstance<options>(options_object)) {
      throw nb::type_error("the options of a solve_into call must be a flashsinkhorn._core.Options");
    }
    auto held = std::make_unique<bound_solver>();
    held->x = raw_argument(call->x);
    held->y = raw_argument(call->y);
    held->a = raw_argument(call->a);
    held->b = raw_argument(call->b);
    const problem p = problem_of(*held, call->eps, call->cost_scale);
    const std::optional<std::uintptr_t> stream =
        call->has_cuda_stream != 0 ? std::optional<std::uintptr_t>(call->cuda_stream) : std::nullopt;
    const auto [owner, s] = owned_solver(std::move(held), p, nb::cast<const options&>(options_object), stream);
    const potential_arrays out{raw_argument(call->f), raw_argument(call->g), raw_argument(call->f_aa),
                               raw_argument(call->g_bb), raw_argument(call->cost)};
    return solve_into_arrays(*s, out, owner).release().ptr();
  } catch (...) {
    set_python_error(std::current_exception());
    return nullptr;
  }
}

// Static: the capsule points at it for the life of the process (the module is never unloaded).
const flashsinkhorn_solve_into_entry entry = {FLASHSINKHORN_SOLVE_INTO_ABI_VERSION, &solve_into};

}  // namespace

void export_solve_into_entry(nb::module_& module) {
  // The capsule API takes a non-const pointer; callers only read the entry.
  PyObject* capsule =
      PyCapsule_New(const_cast<flashsinkhorn_solve_into_entry*>(&entry), FLASHSINKHORN_SOLVE_INTO_CAPSULE, nullptr);
  if (capsule == nullptr) throw nb::python_error();
  module.attr("_solve_into_entry") = nb::steal(capsule);
}

}  // namespace flashsinkhorn::python
