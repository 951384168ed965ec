// The chain rule to parameters (flashsinkhorn/parameter_chain.hpp), on the public API only.
#include "flashsinkhorn/parameter_chain.hpp"

#include <memory>
#include <string>
#include <vector>

#include "core/view_io.hpp"
#include "flashsinkhorn/error.hpp"

namespace flashsinkhorn {
namespace {

void require_size(std::size_t size, std::int64_t expected, const char* what) {
  if (static_cast<std::int64_t>(size) != expected) {
    std::string message = "parameter chain rule: ";
    message.append(what).append(" has ").append(std::to_string(size)).append(" entries, expected ");
    message.append(std::to_string(expected));
    throw invalid_argument(message);
  }
}

void require_map(const point_map& map) {
  if (!map.jvp || !map.vjp) throw invalid_argument("parameter chain rule: the point_map needs both jvp and vjp");
  if (map.parameter_count < 1 || map.point_count < 1 || map.dim < 1) {
    throw invalid_argument("parameter chain rule: the point_map needs parameter_count, point_count and dim ≥ 1");
  }
}

std::vector<double> point_gradient(const solver& s, point_cloud which, const point_map& map) {
  std::vector<double> g(static_cast<std::size_t>(map.point_count * map.dim));
  const mutable_matrix_view view = host_matrix(g.data(), map.point_count, map.dim);
  if (which == point_cloud::x) {
    s.gradient_x(view);
  } else {
    s.gradient_y(view);
  }
  return g;
}

}  // namespace

point_map linear_point_map(matrix_view features, std::int64_t dim) {
  if (dim < 1) throw invalid_argument("linear_point_map: dim must be ≥ 1");
  const std::int64_t count = features.rows, inner = features.cols;
  auto z = std::make_shared<const std::vector<double>>(detail::read_matrix(features, "features"));
  point_map map;
  map.parameter_count = inner * dim;
  map.point_count = count;
  map.dim = dim;
  // (Z·V)_ic = Σ_l Z_il V_lc.
  map.jvp = [z, count, inner, dim](std::span<const double> v, std::span<double> jv) {
    for (std::int64_t i = 0; i < count; ++i) {
      for (std::int64_t c = 0; c < dim; ++c) {
        double s = 0;
        for (std::int64_t l = 0; l < inner; ++l) s += (*z)[i * inner + l] * v[l * dim + c];
        jv[i * dim + c] = s;
      }
    }
  };
  // (Zᵀ·G)_lc = Σ_i Z_il G_ic.
  map.vjp = [z, count, inner, dim](std::span<const double> g, std::span<double> out) {
    for (std::int64_t e = 0; e < inner * dim; ++e) out[e] = 0;
    for (std::int64_t i = 0; i < count; ++i) {
      for (std::int64_t l = 0; l < inner; ++l) {
        const double zil = (*z)[i * inner + l];
        for (std::int64_t c = 0; c < dim; ++c) out[l * dim + c] += zil * g[i * dim + c];
      }
    }
  };
  return map;
}

void parameter_gradient(const solver& s, point_cloud which, const point_map& map, std::span<double> out) {
  require_map(map);
  require_size(out.size(), map.parameter_count, "out");
  const std::vector<double> g = point_gradient(s, which, map);
  map.vjp(g, out);
}

hvp_report parameter_hvp(const solver& s, point_cloud which, const point_map& map, std::span<const double> v,
                         std::span<double> out, const hvp_options& settings) {
  require_map(map);
  require_size(v.size(), map.parameter_count, "v");
  require_size(out.size(), map.parameter_count, "out");
  const std::size_t points = static_cast<std::size_t>(map.point_count * map.dim);
  std::vector<double> jv(points), hjv(points);
  map.jvp(v, jv);
  const matrix_view direction = host_matrix(static_cast<const double*>(jv.data()), map.point_count, map.dim);
  const mutable_matrix_view product = host_matrix(hjv.data(), map.point_count, map.dim);
  const hvp_report report =
      which == point_cloud::x ? s.hvp_x(direction, product, settings) : s.hvp_y(direction, product, settings);
  map.vjp(hjv, out);
  if (map.curvature && settings.part == hvp_part::full) {
    const std::vector<double> g = point_gradient(s, which, map);
    std::vector<double> extra(static_cast<std::size_t>(map.parameter_count));
    map.curvature(g, v, extra);
    for (std::size_t e = 0; e < extra.size(); ++e) out[e] += extra[e];
  }
  return report;
}

}  // namespace flashsinkhorn
