#include "core/joint_hvp.hpp"

#include <algorithm>
#include <cstdint>
#include <string>

#include "core/hvp_checks.hpp"
#include "core/operand_rounding.hpp"
#include "core/oriented_plan.hpp"
#include "core/parallel_rows.hpp"
#include "core/potential_system.hpp"
#include "core/solved_plan.hpp"
#include "core/view_io.hpp"
#include "flashsinkhorn/error.hpp"

namespace flashsinkhorn::detail {
namespace {

double dot(const double* u, const double* v, std::int64_t d) {
  double s = 0;
  for (std::int64_t c = 0; c < d; ++c) s += u[c] * v[c];
  return s;
}

// One side of the product in the derivation's terms (joint_hvp.hpp): rows R, keys K.
struct side_view {
  const std::vector<double>& p;     // (n_R, d) the rows' points
  const std::vector<double>& q;     // (n_K, d) the keys' points
  const std::vector<double>* own;   // A (n_R, d); nullptr: zero
  const std::vector<double>* keys;  // B (n_K, d); nullptr: zero
  std::vector<double>* product;     // (n_R, d); nullptr: not wanted
};

// P_R·[q, B, w, w∘q] (w_j = q_j·B_j) in one pass; a section not asked for stays empty.
struct key_sums {
  std::vector<double> q_bar;   // (n_R, d) P_R·q
  std::vector<double> b_bar;   // (n_R, d) P_R·B
  std::vector<double> w_bar;   // (n_R,)   P_R·w
  std::vector<double> wq_bar;  // (n_R, d) P_R·(w∘q)
};

key_sums sum_over_keys(const oriented_plan& plan, const side_view& v, std::int64_t d, bool want_q, bool want_b,
                       bool want_wq) {
  key_sums sums;
  const std::int64_t width = (want_q ? d : 0) + (want_b ? d + 1 : 0) + (want_wq ? d : 0);
  if (width == 0) return sums;
  const auto keys = static_cast<std::int64_t>(v.q.size()) / d;
  std::vector<double> values(static_cast<std::size_t>(keys * width));  // (n_K, width)
  parallel_rows(keys, width, [&](std::int64_t j) {
    double* row = values.data() + j * width;
    const double* q = v.q.data() + j * d;
    if (want_q) row = std::copy(q, q + d, row);
    if (!want_b && !want_wq) return;
    const double* b = v.keys->data() + j * d;
    const double w = dot(q, b, d);
    if (want_b) {
      row = std::copy(b, b + d, row);
      *row++ = w;
    }
    if (want_wq) {
      for (std::int64_t c = 0; c < d; ++c) *row++ = w * q[c];
    }
  });
  const std::vector<double> out = plan.rows_apply(values, width);  // (n_R, width)
  const auto rows = static_cast<std::int64_t>(v.p.size()) / d;
  const auto section = [&](std::vector<double>& to, std::int64_t offset, std::int64_t k) {
    to.resize(static_cast<std::size_t>(rows * k));
    parallel_rows(rows, k, [&](std::int64_t i) {
      for (std::int64_t c = 0; c < k; ++c) to[i * k + c] = out[i * width + offset + c];
    });
  };
  std::int64_t offset = 0;
  if (want_q) {
    section(sums.q_bar, offset, d);
    offset += d;
  }
  if (want_b) {
    section(sums.b_bar, offset, d);
    section(sums.w_bar, offset + d, 1);
    offset += d + 1;
  }
  if (want_wq) section(sums.wq_bar, offset, d);
  return sums;
}

// What one side keeps for after the solve: its key sums (Q̄ for the implicit part) and ρ_R.
struct side_before_solve {
  key_sums sums;
  std::vector<double> rho;  // (n_R,) ρ_R = Σ_j P_R,ij dC_ij; empty without the implicit part
};

// One side's work before the solve: the rows pass, ρ_R (when the solve runs) and the
// fixed-potential part added to v.product (when wanted). Nothing when neither is needed.

side_before_solve terms_before_solve(const oriented_plan& plan, const side_view& v, std::int64_t d, double two_s,
                                     double eps, hvp_part part) {
  const bool implicit = part != hvp_part::fixed_potential;
  const bool fixed = part != hvp_part::implicit;
  const bool wanted = v.product != nullptr;
  if (!wanted && !implicit) return {};
  const bool want_q = v.own != nullptr || (wanted && implicit);  // Q̄: for ρ_R and E(A), or the implicit part
  const bool want_b = v.keys != nullptr && (implicit || (wanted && fixed));
  const bool want_wq = v.keys != nullptr && wanted && fixed;
  side_before_solve out{sum_over_keys(plan, v, d, want_q, want_b, want_wq), {}};
  const key_sums& s = out.sums;
  const std::vector<double>& p = v.p;
  const std::vector<double>& r = plan.row_mass();
  const auto n = static_cast<std::int64_t>(p.size()) / d;

  std::vector<double> u, q_bar_dot_a;  // (n_R,) u_i = p_i·A_i, Q̄_i·A_i
  if (v.own != nullptr) {
    const std::vector<double>& a = *v.own;
    u.resize(static_cast<std::size_t>(n));
    q_bar_dot_a.resize(static_cast<std::size_t>(n));
    parallel_rows(n, d, [&](std::int64_t i) {
      u[i] = dot(&p[i * d], &a[i * d], d);
      q_bar_dot_a[i] = dot(&s.q_bar[i * d], &a[i * d], d);
    });
  }
  if (implicit) {
    out.rho.assign(static_cast<std::size_t>(n), 0.0);
    parallel_rows(n, d, [&](std::int64_t i) {
      if (v.own != nullptr) out.rho[i] += two_s * (r[i] * u[i] - q_bar_dot_a[i]);
      if (v.keys != nullptr) out.rho[i] += two_s * (s.w_bar[i] - dot(&p[i * d], &s.b_bar[i * d], d));
    });
  }
  if (!wanted || !fixed) return out;

  std::vector<double>& h = *v.product;
  if (v.own != nullptr) {  // 2s [ r_i A_i − E_i(A)/ε ]
    const std::vector<double>& a = *v.own;
    const std::vector<double> second_moment = plan.rows_quadratic(a, v.q, d);  // (n, d) Σ_j P_R,ij (A_i·q_j) q_j
    parallel_rows(n, d, [&](std::int64_t i) {
      for (std::int64_t c = 0; c < d; ++c) {
        const std::size_t ic = static_cast<std::size_t>(i * d + c);
        const double e =
            two_s * (r[i] * u[i] * p[ic] - q_bar_dot_a[i] * p[ic] - u[i] * s.q_bar[ic] + second_moment[ic]);
        h[ic] += two_s * (r[i] * a[ic] - e / eps);
      }
    });
  }
  if (v.keys != nullptr) {  // 2s [ −B̄_i − E_i(B)/ε ]
    const std::vector<double> cross =
        plan.rows_quadratic(p, v.q, d, v.keys->data());  // (n, d) Σ_j P_R,ij (p_i·B_j) q_j
    parallel_rows(n, d, [&](std::int64_t i) {
      const double p_dot_b = dot(&p[i * d], &s.b_bar[i * d], d);
      for (std::int64_t c = 0; c < d; ++c) {
        const std::size_t ic = static_cast<std::size_t>(i * d + c);
        const double e = -two_s * (p_dot_b * p[ic] - cross[ic] - s.w_bar[i] * p[ic] + s.wq_bar[ic]);
        h[ic] += two_s * (-s.b_bar[ic] - e / eps);
      }
    });
  }
  return out;
}

// (2s/ε) Σ_j P_R,ij (δ_R,i + δ_K,j)(p_i − q_j) added to v.product, one pass P_R·[δ_K, δ_K∘q].
void add_implicit_part(const oriented_plan& plan, const side_view& v, const key_sums& sums, std::int64_t d,
                       double two_s, double eps, const std::vector<double>& delta_rows,
                       const std::vector<double>& delta_keys) {
  const std::vector<double>& p = v.p;
  const std::vector<double>& q = v.q;
  const std::vector<double>& r = plan.row_mass();
  const auto n = static_cast<std::int64_t>(p.size()) / d;
  const auto m = static_cast<std::int64_t>(q.size()) / d;
  std::vector<double> weighted_keys(static_cast<std::size_t>(m * (d + 1)));  // (m, d + 1) [δ_K, δ_K∘q]
  parallel_rows(m, d + 1, [&](std::int64_t j) {
    weighted_keys[j * (d + 1)] = delta_keys[j];
    for (std::int64_t c = 0; c < d; ++c) weighted_keys[j * (d + 1) + 1 + c] = delta_keys[j] * q[j * d + c];
  });
  const std::vector<double> beta_delta = plan.rows_apply(weighted_keys, d + 1);  // (n, d + 1) [β, Δ]
  std::vector<double>& h = *v.product;
  parallel_rows(n, d, [&](std::int64_t i) {
    const double beta = beta_delta[i * (d + 1)];
    for (std::int64_t c = 0; c < d; ++c) {
      const std::size_t ic = static_cast<std::size_t>(i * d + c);
      h[ic] += two_s / eps *
               (delta_rows[i] * (r[i] * p[ic] - sums.q_bar[ic]) + beta * p[ic] - beta_delta[i * (d + 1) + 1 + c]);
    }
  });
}

// rounded_operands over all cores.
std::vector<double> rounded_in_parallel(const std::vector<double>& values, precision mode) {
  std::vector<double> out(values.size());
  parallel_rows(static_cast<std::int64_t>(values.size()), 1,
                [&](std::int64_t e) { out[e] = rounded_operand(values[e], mode); });
  return out;
}

// ½(u + v): the two sides' right-hand sides of a symmetric problem, equal up to the solve's
// convergence.
std::vector<double> average(const std::vector<double>& u, const std::vector<double>& v) {
  std::vector<double> mean(u.size());
  for (std::size_t i = 0; i < u.size(); ++i) mean[i] = 0.5 * (u[i] + v[i]);
  return mean;
}

// Whether the prepared problem is its own mirror image: the same points and weights on both sides.
bool is_symmetric(const prepared_problem& kernel) {
  return kernel.x.count == kernel.y.count && kernel.x.points == kernel.y.points && kernel.x.weights == kernel.y.weights;
}

}  // namespace

hvp_report joint_hvp_products(const potential_vjp_context& context, const joint_hvp_vectors& vectors,
                              const hvp_options& settings) {
  const prepared_problem& kernel = context.inputs.kernel;
  const std::int64_t d = kernel.x.dim;
  const double two_s = 2 * kernel.cost_scale;
  const double eps = context.eps;
  if (vectors.product_x != nullptr) vectors.product_x->assign(kernel.x.points.size(), 0.0);
  if (vectors.product_y != nullptr) vectors.product_y->assign(kernel.y.points.size(), 0.0);

  const solved_plan plan(context.compute, kernel, eps);
  const std::vector<double>& a = kernel.x.weights;
  const oriented_plan plan_x(plan, side::x, a, settings.two_gemm);
  const oriented_plan plan_y(plan, side::y, a, settings.two_gemm);
  // The points and directions as the passes' operands are rounded (operand_rounding.hpp): the host
  // terms cancel against the passes' sums consistently. (H is then that of the rounded problem the
  // backend solved, along the rounded direction.)
  const precision mode = context.solve_options.precision;
  const std::vector<double> x_points = rounded_in_parallel(kernel.x.points, mode);
  const std::vector<double> y_points = rounded_in_parallel(kernel.y.points, mode);
  const auto rounded = [mode](const std::vector<double>* direction) {
    return direction == nullptr ? std::vector<double>() : rounded_in_parallel(*direction, mode);
  };
  const std::vector<double> a_dir = rounded(vectors.direction_x), b_dir = rounded(vectors.direction_y);
  const std::vector<double>* direction_x = vectors.direction_x == nullptr ? nullptr : &a_dir;
  const std::vector<double>* direction_y = vectors.direction_y == nullptr ? nullptr : &b_dir;
  const side_view view_x{x_points, y_points, direction_x, direction_y, vectors.product_x};
  const side_view view_y{y_points, x_points, direction_y, direction_x, vectors.product_y};

  const side_before_solve x = terms_before_solve(plan_x, view_x, d, two_s, eps, settings.part);
  const side_before_solve y = terms_before_solve(plan_y, view_y, d, two_s, eps, settings.part);
  hvp_report report;
  if (settings.part != hvp_part::fixed_potential) {
    const potential_system_settings solve{settings.tolerance, settings.max_iterations, settings.preconditioner,
                                          settings.ridge};
    const potential_system_solution delta =
        vectors.symmetric ? solve_symmetric_potential_system(plan, a, average(x.rho, y.rho), solve)
                          : solve_potential_system(plan, a, x.rho, y.rho, solve);
    report.cg_iterations = delta.iterations;
    report.relative_residual = delta.relative_residual;
    report.converged = delta.converged;
    report.gauge_defect = delta.gauge_defect;
    if (view_x.product != nullptr) add_implicit_part(plan_x, view_x, x.sums, d, two_s, eps, delta.f, delta.g);
    if (view_y.product != nullptr) add_implicit_part(plan_y, view_y, y.sums, d, two_s, eps, delta.g, delta.f);
  }
  report.plan_passes = plan.passes();
  return report;
}

hvp_report joint_hvp(const potential_vjp_context& context, const matrix_view& direction_x,
                     const matrix_view& direction_y, const mutable_matrix_view& out_x, const mutable_matrix_view& out_y,
                     const hvp_options& settings) {
  const std::string name = "hvp_xy";
  check_hvp_settings(settings, name);
  require_hvp_support(context, name);
  if (direction_x.empty() && direction_y.empty())
    throw invalid_argument(name +
                           ": both directions are empty; give A (n, d), B (m, d) or both (an empty one is zero)");
  if (out_x.empty() && out_y.empty())
    throw invalid_argument(name + ": both outputs are empty; give out_x (n, d), out_y (m, d) or both");
  const std::int64_t n = context.inputs.kernel.x.count, m = context.inputs.kernel.y.count;
  const std::int64_t d = context.inputs.kernel.x.dim;
  if (!out_x.empty()) check_output_shape(out_x, n, d, name + " out_x");
  if (!out_y.empty()) check_output_shape(out_y, m, d, name + " out_y");
  std::vector<double> a, b, product_x, product_y;
  if (!direction_x.empty()) a = read_hvp_direction(direction_x, n, d, name + " (X direction)");
  if (!direction_y.empty()) b = read_hvp_direction(direction_y, m, d, name + " (Y direction)");
  joint_hvp_vectors vectors;
  vectors.direction_x = direction_x.empty() ? nullptr : &a;
  vectors.direction_y = direction_y.empty() ? nullptr : &b;
  vectors.product_x = out_x.empty() ? nullptr : &product_x;
  vectors.product_y = out_y.empty() ? nullptr : &product_y;
  const hvp_report report = joint_hvp_products(context, vectors, settings);
  if (!out_x.empty()) write_matrix(out_x, product_x, n, d, name + " out_x");
  if (!out_y.empty()) write_matrix(out_y, product_y, m, d, name + " out_y");
  return report;
}

hvp_report self_hvp(const potential_vjp_context& context, const matrix_view& direction, const mutable_matrix_view& out,
                    const hvp_options& settings) {
  const std::string name = "hvp_self";
  check_hvp_settings(settings, name);
  require_hvp_support(context, name);
  const prepared_problem& kernel = context.inputs.kernel;
  if (!is_symmetric(kernel))
    throw invalid_argument(name +
                           ": the problem is not symmetric (X and Y, a and b must be the same arrays: "
                           "OT_ε(a, X; a, X)); use hvp_xy");
  if (settings.ridge != 0)
    throw invalid_argument(name + ": ridge must be 0 (the symmetric system is positive definite, no damping needed)");
  const std::int64_t n = kernel.x.count, d = kernel.x.dim;
  check_output_shape(out, n, d, name);
  const std::vector<double> a = read_hvp_direction(direction, n, d, name);
  std::vector<double> product_x, product_y;
  joint_hvp_vectors vectors;
  vectors.direction_x = vectors.direction_y = &a;
  vectors.product_x = &product_x;
  vectors.product_y = &product_y;
  vectors.symmetric = true;
  const hvp_report report = joint_hvp_products(context, vectors, settings);
  for (std::size_t e = 0; e < product_x.size(); ++e) product_x[e] += product_y[e];
  write_matrix(out, product_x, n, d, name);
  return report;
}

}  // namespace flashsinkhorn::detail
