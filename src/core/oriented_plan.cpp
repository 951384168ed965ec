#include "core/oriented_plan.hpp"

#include "core/parallel_rows.hpp"

namespace flashsinkhorn::detail {

oriented_plan::oriented_plan(const solved_plan& plan, side rows, const std::vector<double>& a, two_gemm_path path)
    : plan_(plan), rows_(rows), a_(a), path_(path) {}

std::vector<double> oriented_plan::rows_apply(const std::vector<double>& values, std::int64_t k) const {
  return rows_ == side::x ? scaled_by_a(plan_.row_average(values, k), k) : plan_.apply_transpose(values, k);
}

std::vector<double> oriented_plan::rows_quadratic(const std::vector<double>& directions,
                                                  const std::vector<double>& values, std::int64_t k,
                                                  const double* key_directions) const {
  return rows_ == side::x ? scaled_by_a(plan_.quadratic_row_average(directions, values, k, path_, key_directions), k)
                          : plan_.quadratic_transpose(directions, values, k, path_, key_directions);
}

const std::vector<double>& oriented_plan::row_mass() const { return rows_ == side::x ? a_ : plan_.column_mass(); }

std::vector<double> oriented_plan::scaled_by_a(std::vector<double> values, std::int64_t k) const {
  parallel_rows(static_cast<std::int64_t>(a_.size()), k, [&](std::int64_t i) {
    for (std::int64_t c = 0; c < k; ++c) values[i * k + c] *= a_[i];
  });
  return values;
}

}  // namespace flashsinkhorn::detail
