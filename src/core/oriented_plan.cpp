#include "core/oriented_plan.hpp"

namespace flashsinkhorn::detail {

oriented_plan::oriented_plan(const solved_plan& plan, side rows, const std::vector<double>& a, two_gemm_path path)
    : plan_(plan), rows_(rows), a_(a), path_(path) {}

void oriented_plan::rows_apply(matrix_store& store, int values, int out, int scratch) const {
  if (rows_ == side::y) return plan_.apply_transpose(store, values, out, scratch);
  plan_.row_average(store, values, out);
  store.combine(out, 0, store.cols(out), false, {{out, 0, &a_, 1.0}});
}

void oriented_plan::rows_quadratic(matrix_store& store, int directions, int values, int key_directions, int out,
                                   int scratch) const {
  if (rows_ == side::y)
    return plan_.quadratic_transpose(store, directions, values, key_directions, out, scratch, path_);
  plan_.quadratic_row_average(store, directions, values, key_directions, out, path_);
  store.combine(out, 0, store.cols(out), false, {{out, 0, &a_, 1.0}});
}

const std::vector<double>& oriented_plan::row_mass() const { return rows_ == side::x ? a_ : plan_.column_mass(); }

}  // namespace flashsinkhorn::detail
