#include "core/hvp_checks.hpp"

#include <cmath>

#include "core/view_io.hpp"
#include "flashsinkhorn/error.hpp"

namespace flashsinkhorn::detail {
namespace {

void refuse(const std::string& name, const char* why) {
  std::string message = name;
  message.append(": ").append(why);
  throw unsupported(message);
}

}  // namespace

void check_hvp_settings(const hvp_options& settings, const std::string& name) {
  if (!std::isfinite(settings.tolerance) || settings.tolerance < 0) {
    std::string message = name;
    message.append(": tolerance must be a finite number ≥ 0, got ").append(std::to_string(settings.tolerance));
    throw invalid_argument(message);
  }
  if (settings.max_iterations < 1) {
    std::string message = name;
    message.append(": max_iterations must be ≥ 1, got ").append(std::to_string(settings.max_iterations));
    throw invalid_argument(message);
  }
  if (!std::isfinite(settings.ridge) || settings.ridge < 0) {
    std::string message = name;
    message.append(": ridge must be a finite number ≥ 0, got ").append(std::to_string(settings.ridge));
    throw invalid_argument(message);
  }
}

void require_hvp_support(const potential_vjp_context& context, const std::string& name) {
  const options& o = context.solve_options;
  if (o.reach_x || o.reach_y)
    refuse(name, "Hessian-vector products are implemented for balanced problems only (reach_x / reach_y is set)");
  if (o.cost == cost_kind::cosine)
    refuse(name, "Hessian-vector products are implemented for the squared-Euclidean cost only (cost is cosine)");
  if (context.inputs.kernel.x.dim != context.inputs.dim)
    refuse(name, "Hessian-vector products do not support a label cost");
  if (o.debias) {
    refuse(name,
           "Hessian-vector products of the debiased value (Sinkhorn divergence) are not implemented; "
           "solve with debias off for the HVP of OT_eps(a, b)");
  }
  for (const prepared_cloud* cloud : {&context.inputs.kernel.x, &context.inputs.kernel.y}) {
    for (std::size_t i = 0; i < cloud->weights.size(); ++i) {
      if (!(cloud->weights[i] > 0)) {
        std::string message = name;
        message.append(": ")
            .append(cloud == &context.inputs.kernel.x ? "a" : "b")
            .append(" has a zero weight at index ");
        message.append(std::to_string(i)).append("; the HVP needs positive weights (drop the point instead)");
        throw unsupported(message);
      }
    }
  }
}

void check_hvp_direction(const matrix_view& view, std::int64_t rows, std::int64_t dim, const std::string& name) {
  if (view.empty()) throw invalid_argument(name + ": the direction is empty");
  if (view.rows != rows || view.cols != dim) {
    std::string message = name;
    message.append(": the direction is ")
        .append(std::to_string(view.rows))
        .append("×")
        .append(std::to_string(view.cols));
    message.append(", expected ").append(std::to_string(rows)).append("×").append(std::to_string(dim));
    throw invalid_argument(message);
  }
}

void throw_nonfinite_direction(const std::string& name, std::int64_t flat_index) {
  std::string message = name;
  message.append(": the direction is not finite at flat index ").append(std::to_string(flat_index));
  throw invalid_argument(message);
}

}  // namespace flashsinkhorn::detail
