// The k largest entries of each row of the plan P_ij = a_i s_ij (s_i = softmax_j((g_j − C_ij)/ε +
// log b_j), core/solved_plan.hpp), from one float64 host scan of the prepared points: what the CPU
// backend's sparse_plan preconditioner is built from (core/sparse_plan_preconditioner.hpp).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "core/prepare.hpp"

namespace flashsinkhorn::detail {

// (n, k) row-major (j, s_ij), the entries of a row largest first; (−1, 0) past m. O(n·m·d).
[[nodiscard]] std::vector<std::pair<std::int64_t, double>> plan_top_entries(const prepared_problem& problem,
                                                                          const std::vector<double>& g, double eps,
                                                                          int k);

}  // namespace flashsinkhorn::detail
