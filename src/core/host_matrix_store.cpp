#include "core/host_matrix_store.hpp"

#include <cmath>
#include <string>
#include <utility>

#include "core/operand_rounding.hpp"
#include "core/parallel_rows.hpp"
#include "core/view_io.hpp"
#include "flashsinkhorn/error.hpp"

namespace flashsinkhorn::detail {

const host_matrix_store::matrix& host_matrix_store::at(int id) const {
  const auto found = matrices_.find(id);
  if (found == matrices_.end()) throw error("matrix store: no matrix " + std::to_string(id));
  return found->second;
}

void host_matrix_store::store(int id, std::vector<double> values, std::int64_t rows, std::int64_t cols) {
  matrix& m = matrices_[id];
  m.rows = rows;
  m.cols = cols;
  m.values = std::move(values);
}

void host_matrix_store::write(int id, const std::vector<double>& values, std::int64_t rows, std::int64_t cols) {
  if (!values.empty() && values.size() != static_cast<std::size_t>(rows * cols))
    throw error("matrix store: " + std::to_string(values.size()) + " values for a " + std::to_string(rows) + "×" +
                std::to_string(cols) + " matrix");
  store(id, values.empty() ? std::vector<double>(static_cast<std::size_t>(rows * cols), 0.0) : values, rows, cols);
}

void host_matrix_store::write_view(int id, const matrix_view& view, const std::string& name) {
  store(id, read_matrix(view, name), view.rows, view.cols);
}

void host_matrix_store::read_into(int id, const mutable_matrix_view& out, const std::string& name) const {
  const matrix& m = at(id);
  write_matrix(out, m.values, m.rows, m.cols, name);
}

std::int64_t host_matrix_store::first_nonfinite(int id) const {
  const std::vector<double>& values = at(id).values;
  for (std::size_t e = 0; e < values.size(); ++e)
    if (!std::isfinite(values[e])) return static_cast<std::int64_t>(e);
  return -1;
}

void host_matrix_store::load_points(int id, side s) {
  const prepared_cloud& cloud = s == side::x ? problem_.x : problem_.y;
  store(id, cloud.points, cloud.count, cloud.dim);
  round_to_operands(id);
}

void host_matrix_store::round_to_operands(int id) {
  std::vector<double>& values = at(id).values;
  parallel_rows(static_cast<std::int64_t>(values.size()), 1,
                [&](std::int64_t e) { values[e] = rounded_operand(values[e], mode_); });
}

void host_matrix_store::combine(int target, std::int64_t column, std::int64_t width, bool accumulate,
                                const std::vector<matrix_term>& terms) {
  matrix& out = at(target);
  std::vector<const matrix*> sources;
  for (const matrix_term& t : terms) sources.push_back(&at(t.source));
  parallel_rows(out.rows, width, [&](std::int64_t i) {
    for (std::int64_t c = 0; c < width; ++c) {
      double sum = accumulate ? out.values[i * out.cols + column + c] : 0.0;
      for (std::size_t t = 0; t < terms.size(); ++t) {
        const double scale = terms[t].scale * (terms[t].row_scale != nullptr ? (*terms[t].row_scale)[i] : 1.0);
        sum += scale * sources[t]->values[i * sources[t]->cols + terms[t].column + c];
      }
      out.values[i * out.cols + column + c] = sum;
    }
  });
}

std::vector<double> host_matrix_store::column(int id, std::int64_t column) const {
  const matrix& m = at(id);
  std::vector<double> out(static_cast<std::size_t>(m.rows));
  for (std::int64_t i = 0; i < m.rows; ++i) out[i] = m.values[i * m.cols + column];
  return out;
}

std::vector<double> host_matrix_store::row_dots(int a, std::int64_t a_column, int b, std::int64_t b_column,
                                                std::int64_t width) const {
  const matrix& ma = at(a);
  const matrix& mb = at(b);
  std::vector<double> dots(static_cast<std::size_t>(ma.rows));
  parallel_rows(ma.rows, width, [&](std::int64_t i) {
    double sum = 0;
    for (std::int64_t c = 0; c < width; ++c) sum += ma.values[i * ma.cols + a_column + c] * mb.values[i * mb.cols + b_column + c];
    dots[i] = sum;
  });
  return dots;
}

void host_matrix_store::plan_rows(const plan_rows_request& request, int values, int out) {
  const matrix& v = at(values);
  plan_rows_request pass = request;
  pass.values = v.values.data();
  pass.k = v.cols;
  plan_rows_result result = compute_.plan_rows(pass);
  const std::int64_t rows = static_cast<std::int64_t>(result.lse.size());
  store(out, std::move(result.weighted), rows, v.cols);
}

void host_matrix_store::plan_quadratic_rows(const plan_quadratic_request& request, int directions, int values,
                                            int key_directions, int out) {
  const matrix& v = at(values);
  plan_quadratic_request pass = request;
  pass.directions = at(directions).values.data();
  pass.values = v.values.data();
  pass.k = v.cols;
  pass.key_directions = key_directions >= 0 ? at(key_directions).values.data() : nullptr;
  plan_rows_result result = compute_.plan_quadratic_rows(pass);
  const std::int64_t rows = static_cast<std::int64_t>(result.lse.size());
  store(out, std::move(result.weighted), rows, v.cols);
}

}  // namespace flashsinkhorn::detail
