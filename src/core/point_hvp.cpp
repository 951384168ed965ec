#include "core/point_hvp.hpp"

#include <cmath>
#include <string>
#include <vector>

#include "core/potential_system.hpp"
#include "core/solved_plan.hpp"
#include "core/view_io.hpp"
#include "flashsinkhorn/error.hpp"

namespace flashsinkhorn::detail {
namespace {

std::string hvp_name(side rows) { return rows == side::x ? "hvp_x" : "hvp_y"; }

void validate_settings(const hvp_options& settings, const std::string& name) {
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

void refuse(const std::string& name, const char* why) {
  std::string message = name;
  message.append(": ").append(why);
  throw unsupported(message);
}

void require_supported(const potential_vjp_context& context, const std::string& name) {
  const options& o = context.solve_options;
  if (o.reach_x || o.reach_y) refuse(name, "Hessian-vector products are implemented for balanced problems only (reach_x / reach_y is set)");
  if (o.cost == cost_kind::cosine) refuse(name, "Hessian-vector products are implemented for the squared-Euclidean cost only (cost is cosine)");
  if (context.inputs.kernel.x.dim != context.inputs.dim) refuse(name, "Hessian-vector products do not support a label cost");
  if (o.debias) {
    refuse(name, "Hessian-vector products of the debiased value (Sinkhorn divergence) are not implemented; "
                 "solve with debias off for the HVP of OT_eps(a, b)");
  }
  for (const prepared_cloud* cloud : {&context.inputs.kernel.x, &context.inputs.kernel.y}) {
    for (std::size_t i = 0; i < cloud->weights.size(); ++i) {
      if (!(cloud->weights[i] > 0)) {
        std::string message = name;
        message.append(": ").append(cloud == &context.inputs.kernel.x ? "a" : "b").append(" has a zero weight at index ");
        message.append(std::to_string(i)).append("; the HVP needs positive weights (drop the point instead)");
        throw unsupported(message);
      }
    }
  }
}

std::vector<double> read_direction(const matrix_view& view, std::int64_t rows, std::int64_t dim, const std::string& name) {
  if (view.empty()) throw invalid_argument(name + ": the direction is empty");
  if (view.rows != rows || view.cols != dim) {
    std::string message = name;
    message.append(": the direction is ").append(std::to_string(view.rows)).append("×").append(std::to_string(view.cols));
    message.append(", expected ").append(std::to_string(rows)).append("×").append(std::to_string(dim));
    throw invalid_argument(message);
  }
  std::vector<double> values = read_matrix(view, "direction");
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (!std::isfinite(values[i])) {
      std::string message = name;
      message.append(": the direction is not finite at flat index ").append(std::to_string(i));
      throw invalid_argument(message);
    }
  }
  return values;
}

// P_R and its transpose, sums over the other side (not averages), for R = rows.
class oriented_plan {
 public:
  oriented_plan(const solved_plan& plan, side rows, const std::vector<double>& a, two_gemm_path path)
      : plan_(plan), rows_(rows), a_(a), path_(path) {}

  // P_R·V: V (keys, k) → (rows, k).
  [[nodiscard]] std::vector<double> rows_apply(const std::vector<double>& v, std::int64_t k) const {
    return rows_ == side::x ? scaled_by_a(plan_.row_average(v, k), k) : plan_.apply_transpose(v, k);
  }
  // P_Rᵀ·U: U (rows, k) → (keys, k).
  [[nodiscard]] std::vector<double> keys_apply(const std::vector<double>& u, std::int64_t k) const {
    return rows_ == side::x ? plan_.apply_transpose(u, k) : scaled_by_a(plan_.row_average(u, k), k);
  }
  // Σ_j P_R,ij (u_i·q_j) V_j: u (rows, d), V (keys, k) → (rows, k).
  [[nodiscard]] std::vector<double> rows_quadratic(const std::vector<double>& u, const std::vector<double>& v,
                                                   std::int64_t k) const {
    return rows_ == side::x ? scaled_by_a(plan_.quadratic_row_average(u, v, k, path_), k)
                            : plan_.quadratic_transpose(u, v, k, path_);
  }
  // r = P_R·1.
  [[nodiscard]] const std::vector<double>& row_mass() const { return rows_ == side::x ? a_ : plan_.column_mass(); }

 private:
  std::vector<double> scaled_by_a(std::vector<double> v, std::int64_t k) const {
    for (std::size_t i = 0; i < a_.size(); ++i) {
      for (std::int64_t c = 0; c < k; ++c) v[i * k + c] *= a_[i];
    }
    return v;
  }

  const solved_plan& plan_;
  side rows_;
  const std::vector<double>& a_;
  two_gemm_path path_;
};

double dot(const double* u, const double* v, std::int64_t d) {
  double s = 0;
  for (std::int64_t c = 0; c < d; ++c) s += u[c] * v[c];
  return s;
}

}  // namespace

hvp_report point_hvp(const potential_vjp_context& context, side rows, const matrix_view& direction_view,
                     const mutable_matrix_view& out, const hvp_options& settings) {
  const std::string name = hvp_name(rows);
  validate_settings(settings, name);
  require_supported(context, name);
  const prepared_cloud& row_cloud = rows == side::x ? context.inputs.kernel.x : context.inputs.kernel.y;
  const prepared_cloud& key_cloud = rows == side::x ? context.inputs.kernel.y : context.inputs.kernel.x;
  const std::int64_t n = row_cloud.count, m = key_cloud.count, d = row_cloud.dim;
  check_output_shape(out, n, d, name);
  const std::vector<double> a_dir = read_direction(direction_view, n, d, name);
  const std::vector<double>& p = row_cloud.points;
  const std::vector<double>& q = key_cloud.points;
  const double two_s = 2 * context.inputs.kernel.cost_scale;
  const double eps = context.eps;

  const solved_plan plan(context.compute, context.inputs.kernel, eps);
  const std::vector<double>& a = context.inputs.kernel.x.weights;
  const oriented_plan plan_r(plan, rows, a, settings.two_gemm);
  const std::vector<double>& r = plan_r.row_mass();

  std::vector<double> u(static_cast<std::size_t>(n));  // u_i = p_i·A_i
  for (std::int64_t i = 0; i < n; ++i) u[i] = dot(&p[i * d], &a_dir[i * d], d);
  const std::vector<double> q_bar = plan_r.rows_apply(q, d);  // (n, d) P_R·q
  std::vector<double> q_bar_dot_a(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) q_bar_dot_a[i] = dot(&q_bar[i * d], &a_dir[i * d], d);

  std::vector<double> hvp(static_cast<std::size_t>(n * d), 0.0);
  hvp_report report;
  if (settings.part != hvp_part::implicit) {
    const std::vector<double> second_moment = plan_r.rows_quadratic(a_dir, q, d);  // (n, d) M·A
    for (std::int64_t i = 0; i < n; ++i) {
      for (std::int64_t c = 0; c < d; ++c) {
        const std::size_t ic = static_cast<std::size_t>(i * d + c);
        const double e = two_s * (r[i] * u[i] * p[ic] - q_bar_dot_a[i] * p[ic] - u[i] * q_bar[ic] + second_moment[ic]);
        hvp[ic] += two_s * (r[i] * a_dir[ic] - e / eps);
      }
    }
  }
  if (settings.part != hvp_part::fixed_potential) {
    std::vector<double> rho_rows(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) rho_rows[i] = two_s * (r[i] * u[i] - q_bar_dot_a[i]);
    // P_Rᵀ·[A, u]: columns [0, d) P_RᵀA, d P_Rᵀu.
    std::vector<double> a_and_u(static_cast<std::size_t>(n * (d + 1)));
    for (std::int64_t i = 0; i < n; ++i) {
      for (std::int64_t c = 0; c < d; ++c) a_and_u[i * (d + 1) + c] = a_dir[i * d + c];
      a_and_u[i * (d + 1) + d] = u[i];
    }
    const std::vector<double> key_sums = plan_r.keys_apply(a_and_u, d + 1);
    std::vector<double> rho_keys(static_cast<std::size_t>(m));
    for (std::int64_t j = 0; j < m; ++j) {
      rho_keys[j] = two_s * (key_sums[j * (d + 1) + d] - dot(&q[j * d], &key_sums[j * (d + 1)], d));
    }
    const bool on_x = rows == side::x;
    potential_system_solution delta = solve_potential_system(
        plan, a, on_x ? rho_rows : rho_keys, on_x ? rho_keys : rho_rows,
        {settings.tolerance, settings.max_iterations, settings.preconditioner, settings.ridge});
    report.cg_iterations = delta.iterations;
    report.relative_residual = delta.relative_residual;
    report.converged = delta.converged;
    report.gauge_defect = on_x ? delta.gauge_defect : -delta.gauge_defect;
    const std::vector<double>& delta_rows = on_x ? delta.f : delta.g;
    const std::vector<double>& delta_keys = on_x ? delta.g : delta.f;

    // P_R·[δ_K, δ_K∘q]: column 0 β, columns [1, d] B.
    std::vector<double> weighted_keys(static_cast<std::size_t>(m * (d + 1)));
    for (std::int64_t j = 0; j < m; ++j) {
      weighted_keys[j * (d + 1)] = delta_keys[j];
      for (std::int64_t c = 0; c < d; ++c) weighted_keys[j * (d + 1) + 1 + c] = delta_keys[j] * q[j * d + c];
    }
    const std::vector<double> sums = plan_r.rows_apply(weighted_keys, d + 1);
    for (std::int64_t i = 0; i < n; ++i) {
      const double beta = sums[i * (d + 1)];
      for (std::int64_t c = 0; c < d; ++c) {
        const std::size_t ic = static_cast<std::size_t>(i * d + c);
        hvp[ic] += two_s / eps *
                   (delta_rows[i] * (r[i] * p[ic] - q_bar[ic]) + beta * p[ic] - sums[i * (d + 1) + 1 + c]);
      }
    }
  }
  report.plan_passes = plan.passes();
  write_matrix(out, hvp, n, d, name);
  return report;
}

}  // namespace flashsinkhorn::detail
