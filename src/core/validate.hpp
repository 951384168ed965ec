// All argument validation, in one place. Every check throws flashsinkhorn::invalid_argument with a
// message that names the argument and the offending value or index.
#pragma once

#include <string_view>
#include <vector>

#include "flashsinkhorn/options.hpp"
#include "flashsinkhorn/problem.hpp"

namespace flashsinkhorn::detail {

// Scalars, shapes and options (no array values).
void validate_arguments(const problem& p, const options& o);

// Array values once read: points finite; weights finite, ≥ 0, not all zero.
void validate_points(const std::vector<double>& points, std::int64_t cols, std::string_view name);
void validate_weights(const std::vector<double>& weights, std::string_view name);
void validate_potential(const std::vector<double>& potential, std::string_view name);

}  // namespace flashsinkhorn::detail
