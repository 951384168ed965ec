// All argument validation, in one place. Every check throws flashsinkhorn::invalid_argument with a
// message that names the argument and the offending value or index.
#pragma once

#include <cstdint>
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

// The label cost once read (shapes were checked by validate_arguments): labels in [0, L); W finite,
// ≥ 0, zero diagonal and symmetric to 1e-9·max|W| — then W is made exactly symmetric (and its
// diagonal exactly 0), which the embedding (label_embedding.hpp) assumes.
void validate_labels(const std::vector<std::int32_t>& labels, std::int64_t label_count, std::string_view name);
void validate_label_distances(std::vector<double>& distances, std::int64_t label_count);

}  // namespace flashsinkhorn::detail
