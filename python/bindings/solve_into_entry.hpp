#pragma once

#include <nanobind/nanobind.h>

namespace flashsinkhorn::python {

// Sets module._solve_into_entry: the capsule FLASHSINKHORN_SOLVE_INTO_CAPSULE of
// solve_into_entry.h, through which flashsinkhorn._torch_calls calls new_solved_into on raw
// arrays — no Python object per array, no argument parsing.
void export_solve_into_entry(nanobind::module_& module);

}  // namespace flashsinkhorn::python
