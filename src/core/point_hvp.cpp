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
  check_hvp_direction(direction_view, n, d, name);
  joint_hvp_views views;
  (rows == side::x ? views.direction_x : views.direction_y) = direction_view;
  (rows == side::x ? views.product_x : views.product_y) = out;
  views.direction_x_name = views.direction_y_name = views.product_x_name = views.product_y_name = name;
  hvp_report report = joint_hvp_products(context, views, settings);
  if (rows == side::y) report.gauge_defect = -report.gauge_defect;
  return report;
}

}  // namespace flashsinkhorn::detail
