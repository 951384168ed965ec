#include "core/point_hvp.hpp"

#include <string>
#include <vector>

#include "core/hvp_checks.hpp"
#include "core/joint_hvp.hpp"
#include "core/view_io.hpp"

namespace flashsinkhorn::detail {

hvp_report point_hvp(const potential_vjp_context& context, side rows, const matrix_view& direction_view,
                     const mutable_matrix_view& out, const hvp_options& settings) {
  const std::string name = rows == side::x ? "hvp_x" : "hvp_y";
  check_hvp_settings(settings, name);
  require_hvp_support(context, name);
  const prepared_cloud& row_cloud = rows == side::x ? context.inputs.kernel.x : context.inputs.kernel.y;
  const std::int64_t n = row_cloud.count, d = row_cloud.dim;
  check_output_shape(out, n, d, name);
  const std::vector<double> direction = read_hvp_direction(direction_view, n, d, name);
  std::vector<double> product;
  joint_hvp_vectors vectors;
  (rows == side::x ? vectors.direction_x : vectors.direction_y) = &direction;
  (rows == side::x ? vectors.product_x : vectors.product_y) = &product;
  hvp_report report = joint_hvp_products(context, vectors, settings);
  if (rows == side::y) report.gauge_defect = -report.gauge_defect;
  write_matrix(out, product, n, d, name);
  return report;
}

}  // namespace flashsinkhorn::detail
