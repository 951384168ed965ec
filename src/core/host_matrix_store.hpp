// The matrix store (core/matrix_store.hpp) in host memory, over a backend's host-vector passes:
// what the CPU backend's Hessian-vector products use, and the reference the device store is
// tested against. The points come from the prepared problem, rounded as the backend's operands
// (core/operand_rounding.hpp).
#pragma once

#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/backend.hpp"
#include "core/matrix_store.hpp"
#include "core/prepared_cloud.hpp"
#include "flashsinkhorn/options.hpp"

namespace flashsinkhorn::detail {

class host_matrix_store final : public matrix_store {
 public:
  host_matrix_store(const backend& compute, const prepared_problem& problem, precision mode)
      : compute_(compute), problem_(problem), mode_(mode) {}

  void write(int id, const std::vector<double>& values, std::int64_t rows, std::int64_t cols) override;
  void write_view(int id, const matrix_view& view, const std::string& name) override;
  void read_into(int id, const mutable_matrix_view& out, const std::string& name) const override;
  [[nodiscard]] std::int64_t first_nonfinite(int id) const override;
  void load_points(int id, side s) override;
  void round_to_operands(int id) override;
  [[nodiscard]] std::vector<double> read(int id) const override { return at(id).values; }
  [[nodiscard]] std::vector<double> column(int id, std::int64_t column) const override;
  [[nodiscard]] std::int64_t rows(int id) const override { return at(id).rows; }
  [[nodiscard]] std::int64_t cols(int id) const override { return at(id).cols; }
  void combine(int target, std::int64_t column, std::int64_t width, bool accumulate,
               const std::vector<matrix_term>& terms) override;
  [[nodiscard]] std::vector<double> row_dots(int a, std::int64_t a_column, int b, std::int64_t b_column,
                                             std::int64_t width) const override;
  void plan_rows(const plan_rows_request& request, int values, int out) override;
  void plan_quadratic_rows(const plan_quadratic_request& request, int directions, int values, int key_directions,
                           int out) override;

 private:
  struct matrix {
    std::int64_t rows = 0;
    std::int64_t cols = 0;
    std::vector<double> values;  // (rows, cols)
  };
  [[nodiscard]] const matrix& at(int id) const;
  [[nodiscard]] matrix& at(int id) { return const_cast<matrix&>(std::as_const(*this).at(id)); }
  void store(int id, std::vector<double> values, std::int64_t rows, std::int64_t cols);

  const backend& compute_;
  const prepared_problem& problem_;
  precision mode_;
  std::unordered_map<int, matrix> matrices_;
};

}  // namespace flashsinkhorn::detail
