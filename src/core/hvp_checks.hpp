// What every Hessian-vector product (solver::hvp_x, hvp_y, hvp_xy) checks before it streams a pass:
// the settings, the problem's support domain (hessian.hpp) and a direction's shape and values.
// Each throws invalid_argument or unsupported with a message that starts with `name`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/potential_vjp.hpp"
#include "flashsinkhorn/array_view.hpp"
#include "flashsinkhorn/hessian.hpp"

namespace flashsinkhorn::detail {

// tolerance finite ≥ 0, max_iterations ≥ 1, ridge finite ≥ 0.
void check_hvp_settings(const hvp_options& settings, const std::string& name);

// Balanced, squared-Euclidean (no label cost), not debiased, every weight > 0.
void require_hvp_support(const potential_vjp_context& context, const std::string& name);

// A direction's view: non-empty, (rows, dim). Its values are checked where they are read (the
// matrix store, core/joint_hvp.cpp), with throw_nonfinite_direction.
void check_hvp_direction(const matrix_view& view, std::int64_t rows, std::int64_t dim, const std::string& name);
[[noreturn]] void throw_nonfinite_direction(const std::string& name, std::int64_t flat_index);

}  // namespace flashsinkhorn::detail
