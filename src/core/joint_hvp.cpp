#include "core/joint_hvp.hpp"

#include <algorithm>
#include <cstdint>
#include <string>

#include "core/float64_replica.hpp"
#include "core/hvp_checks.hpp"
#include "core/host_matrix_store.hpp"
#include "core/matrix_store.hpp"
#include "core/oriented_plan.hpp"
#include "core/potential_system.hpp"
#include "core/solved_plan.hpp"
#include "core/view_io.hpp"
#include "flashsinkhorn/error.hpp"

namespace flashsinkhorn::detail {
namespace {

// The store's matrices of one side of the product in the derivation's terms (joint_hvp.hpp): rows
// R, keys K. Each side has its own block of names, so that both sides' key sums outlive the solve.
struct side_view {
  std::int64_t rows = 0;   // n_R
  std::int64_t keys = 0;   // n_K
  int p = -1;              // (n_R, d) the rows' points
  int q = -1;              // (n_K, d) the keys' points
  int own = -1;            // A (n_R, d); < 0: zero
  int key_direction = -1;  // B (n_K, d); < 0: zero
  int product = -1;        // (n_R, d); < 0: not wanted
  int values = -1;         // scratch names of this side: the values of a pass,
  int sums = -1;           //   its sums (the key sums Q̄, B̄, w̄, W̄ until the implicit part),
  int quadratic = -1;      //   a quadratic pass's result,
  int scratch = -1;        //   a y-rows pass's reweighted values,
  int column = -1;         //   and an (n_K, 1) column from the host
};

// Where P_R·[q, B, w, w∘q] (w_j = q_j·B_j) put its sections in the side's `sums` matrix; −1: not
// asked for.
struct key_sums {
  std::int64_t q_bar = -1;   // (n_R, d) P_R·q
  std::int64_t b_bar = -1;   // (n_R, d) P_R·B
  std::int64_t w_bar = -1;   // (n_R,)   P_R·w
  std::int64_t wq_bar = -1;  // (n_R, d) P_R·(w∘q)
};

key_sums sum_over_keys(matrix_store& store, const oriented_plan& plan, const side_view& v, std::int64_t d,
                       bool want_q, bool want_b, bool want_wq) {
  key_sums sums;
  const std::int64_t width = (want_q ? d : 0) + (want_b ? d + 1 : 0) + (want_wq ? d : 0);
  if (width == 0) return sums;
  store.write(v.values, {}, v.keys, width);  // (n_K, width)
  std::int64_t offset = 0;
  if (want_q) {
    store.combine(v.values, offset, d, false, {{v.q}});
    sums.q_bar = offset;
    offset += d;
  }
  if (want_b || want_wq) {
    const std::vector<double> w = store.row_dots(v.q, 0, v.key_direction, 0, d);
    if (want_b) {
      store.combine(v.values, offset, d, false, {{v.key_direction}});
      store.write(v.column, w, v.keys, 1);
      store.combine(v.values, offset + d, 1, false, {{v.column}});
      sums.b_bar = offset;
      sums.w_bar = offset + d;
      offset += d + 1;
    }
    if (want_wq) {
      store.combine(v.values, offset, d, false, {{v.q, 0, &w}});
      sums.wq_bar = offset;
    }
  }
  plan.rows_apply(store, v.values, v.sums, v.scratch);  // (n_R, width)
  return sums;
}

// What one side keeps for after the solve: where its key sums are (Q̄ for the implicit part) and ρ_R.
struct side_before_solve {
  key_sums sums;
  std::vector<double> rho;  // (n_R,) ρ_R = Σ_j P_R,ij dC_ij; empty without the implicit part
};

// One side's work before the solve: the rows pass, ρ_R (when the solve runs) and the
// fixed-potential part added to the side's product (when wanted). Nothing when neither is needed.
side_before_solve terms_before_solve(matrix_store& store, const oriented_plan& plan, const side_view& v,
                                     std::int64_t d, double two_s, double eps, hvp_part part) {
  const bool implicit = part != hvp_part::fixed_potential;
  const bool fixed = part != hvp_part::implicit;
  const bool wanted = v.product >= 0;
  const bool has_own = v.own >= 0, has_keys = v.key_direction >= 0;
  if (!wanted && !implicit) return {};
  const bool want_q = has_own || (wanted && implicit);  // Q̄: for ρ_R and E(A), or the implicit part
  const bool want_b = has_keys && (implicit || (wanted && fixed));
  const bool want_wq = has_keys && wanted && fixed;
  side_before_solve out{sum_over_keys(store, plan, v, d, want_q, want_b, want_wq), {}};
  const key_sums& s = out.sums;
  const std::vector<double>& r = plan.row_mass();
  const std::int64_t n = v.rows;

  std::vector<double> u, q_bar_dot_a;  // (n_R,) u_i = p_i·A_i, Q̄_i·A_i
  if (has_own) {
    u = store.row_dots(v.p, 0, v.own, 0, d);
    q_bar_dot_a = store.row_dots(v.sums, s.q_bar, v.own, 0, d);
  }
  std::vector<double> p_dot_b_bar, w_bar;  // (n_R,) p_i·B̄_i, w̄_i
  if (want_b) {
    p_dot_b_bar = store.row_dots(v.p, 0, v.sums, s.b_bar, d);
    w_bar = store.column(v.sums, s.w_bar);
  }
  if (implicit) {
    out.rho.assign(static_cast<std::size_t>(n), 0.0);
    for (std::int64_t i = 0; i < n; ++i) {
      if (has_own) out.rho[i] += two_s * (r[i] * u[i] - q_bar_dot_a[i]);
      if (has_keys) out.rho[i] += two_s * (w_bar[i] - p_dot_b_bar[i]);
    }
  }
  if (!wanted || !fixed) return out;

  const double e_scale = two_s * two_s / eps;  // 2s·(2s/ε): E's factor over ε
  if (has_own) {  // 2s [ r_i A_i − E_i/ε ],  E_i = 2s [ (r_i u_i − Q̄_i·A_i) p_i − u_i Q̄_i + M_i ]
    plan.rows_quadratic(store, v.own, v.q, -1, v.quadratic, v.scratch);  // M = Σ_j P_R,ij (A_i·q_j) q_j
    std::vector<double> p_factor(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) p_factor[i] = r[i] * u[i] - q_bar_dot_a[i];
    store.combine(v.product, 0, d, true,
                  {{v.own, 0, &r, two_s}, {v.p, 0, &p_factor, -e_scale}, {v.sums, s.q_bar, &u, e_scale},
                   {v.quadratic, 0, nullptr, -e_scale}});
  }
  if (has_keys) {  // 2s [ −B̄_i − E_i/ε ],  E_i = −2s [ (p_i·B̄_i − w̄_i) p_i − X_i + W̄_i ]
    plan.rows_quadratic(store, v.p, v.q, v.key_direction, v.quadratic, v.scratch);  // X = Σ_j P_R,ij (p_i·B_j) q_j
    std::vector<double> p_factor(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) p_factor[i] = p_dot_b_bar[i] - w_bar[i];
    store.combine(v.product, 0, d, true,
                  {{v.sums, s.b_bar, nullptr, -two_s}, {v.p, 0, &p_factor, e_scale},
                   {v.quadratic, 0, nullptr, -e_scale}, {v.sums, s.wq_bar, nullptr, e_scale}});
  }
  return out;
}

// (2s/ε) Σ_j P_R,ij (δ_R,i + δ_K,j)(p_i − q_j) = (2s/ε) [ δ_R,i (r_i p_i − Q̄_i) + β_i p_i − Δ_i ]
// added to the side's product, one pass [β, Δ] = P_R·[δ_K, δ_K∘q]. The side's `sums` still hold Q̄;
// the pass's values and results take the side's `values` and `quadratic` names.
void add_implicit_part(matrix_store& store, const oriented_plan& plan, const side_view& v, const key_sums& sums,
                       std::int64_t d, double two_s, double eps, const std::vector<double>& delta_rows,
                       const std::vector<double>& delta_keys) {
  const std::vector<double>& r = plan.row_mass();
  store.write(v.values, {}, v.keys, d + 1);  // (n_K, d + 1) [δ_K, δ_K∘q]
  store.write(v.column, delta_keys, v.keys, 1);
  store.combine(v.values, 0, 1, false, {{v.column}});
  store.combine(v.values, 1, d, false, {{v.q, 0, &delta_keys}});
  plan.rows_apply(store, v.values, v.quadratic, v.scratch);  // (n_R, d + 1) [β, Δ]
  const std::vector<double> beta = store.column(v.quadratic, 0);
  std::vector<double> p_factor(static_cast<std::size_t>(v.rows));
  for (std::int64_t i = 0; i < v.rows; ++i) p_factor[i] = delta_rows[i] * r[i] + beta[i];
  store.combine(v.product, 0, d, true,
                {{v.p, 0, &p_factor, two_s / eps}, {v.sums, sums.q_bar, &delta_rows, -two_s / eps},
                 {v.quadratic, 1, nullptr, -two_s / eps}});
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

// The store's names: the shared matrices, then one block per side (side_view).
enum : int { kPointsX, kPointsY, kDirectionX, kDirectionY, kProductX, kProductY, kSideX = 8, kSideY = 16 };

side_view view_of(side rows, std::int64_t n_rows, std::int64_t n_keys, bool own, bool keys, bool product) {
  const bool x = rows == side::x;
  const int block = x ? kSideX : kSideY;
  side_view v;
  v.rows = n_rows;
  v.keys = n_keys;
  v.p = x ? kPointsX : kPointsY;
  v.q = x ? kPointsY : kPointsX;
  v.own = own ? (x ? kDirectionX : kDirectionY) : -1;
  v.key_direction = keys ? (x ? kDirectionY : kDirectionX) : -1;
  v.product = product ? (x ? kProductX : kProductY) : -1;
  v.values = block;
  v.sums = block + 1;
  v.quadratic = block + 2;
  v.scratch = block + 3;
  v.column = block + 4;
  return v;
}

}  // namespace

hvp_report joint_hvp_products(const potential_vjp_context& context, const joint_hvp_views& views,
                              const hvp_options& settings) {
  const auto this_product = [&](const potential_vjp_context& on) { return joint_hvp_products(on, views, settings); };
  // An earlier product of this solve fell short, or the plan foresees it (float64_replica.hpp).
  const bool sparse_system =
      settings.part != hvp_part::fixed_potential && settings.preconditioner == cg_preconditioner::sparse_plan;
  if (starts_in_float64(context, sparse_system)) return on_float64_replica(context, this_product);
  const prepared_problem& kernel = context.inputs.kernel;
  const std::int64_t n = kernel.x.count, m = kernel.y.count, d = kernel.x.dim;
  const double two_s = 2 * kernel.cost_scale;
  const double eps = context.eps;

  // The matrices live where the passes run (the backend's store, else one on the host). The points
  // and directions are the passes' operands, rounded (operand_rounding.hpp): the host terms cancel
  // against the passes' sums consistently. (H is then that of the rounded problem the backend
  // solved, along the rounded direction.) The directions are read and checked before any pass.
  host_matrix_store host_store(context.compute, kernel, context.solve_options.precision);
  matrix_store& store = context.compute.matrices() != nullptr ? *context.compute.matrices() : host_store;
  const bool has_a = !views.direction_x.empty(), has_b = !views.direction_y.empty();
  const auto read_direction = [&store](int id, const matrix_view& view, const std::string& name) {
    store.write_view(id, view, name);
    if (const std::int64_t bad = store.first_nonfinite(id); bad >= 0) throw_nonfinite_direction(name, bad);
    store.round_to_operands(id);
  };
  if (has_a) read_direction(kDirectionX, views.direction_x, views.direction_x_name);
  if (has_b) read_direction(kDirectionY, views.direction_y, views.direction_y_name);
  store.load_points(kPointsX, side::x);
  store.load_points(kPointsY, side::y);
  const bool want_x = !views.product_x.empty(), want_y = !views.product_y.empty() || views.symmetric;
  if (want_x) store.write(kProductX, {}, n, d);
  if (want_y) store.write(kProductY, {}, m, d);

  const solved_plan plan(context.compute, kernel, eps);
  const std::vector<double>& a = kernel.x.weights;
  const oriented_plan plan_x(plan, side::x, a, settings.two_gemm);
  const oriented_plan plan_y(plan, side::y, a, settings.two_gemm);
  const side_view view_x = view_of(side::x, n, m, has_a, has_b, want_x);
  const side_view view_y = view_of(side::y, m, n, has_b, has_a, want_y);

  const side_before_solve x = terms_before_solve(store, plan_x, view_x, d, two_s, eps, settings.part);
  const side_before_solve y = terms_before_solve(store, plan_y, view_y, d, two_s, eps, settings.part);
  hvp_report report;
  if (settings.part != hvp_part::fixed_potential) {
    potential_system_settings solve{settings.tolerance, settings.max_iterations, settings.preconditioner,
                                    settings.ridge};
    solve.stop_when_sparse_falls_short = redone_in_float64(context);
    const potential_system_solution delta =
        views.symmetric ? solve_symmetric_potential_system(plan, a, average(x.rho, y.rho), solve)
                        : solve_potential_system(plan, a, x.rho, y.rho, solve);
    if (delta.sparse_fell_short) {  // the whole product again, on float64 passes (float64_replica.hpp)
      hvp_report again = on_float64_replica(context, this_product);
      again.cg_iterations += delta.iterations;
      again.plan_passes += plan.passes();
      return again;
    }
    report.cg_iterations = delta.iterations;
    report.relative_residual = delta.relative_residual;
    report.converged = delta.converged;
    report.gauge_defect = delta.gauge_defect;
    if (want_x) add_implicit_part(store, plan_x, view_x, x.sums, d, two_s, eps, delta.f, delta.g);
    if (want_y) add_implicit_part(store, plan_y, view_y, y.sums, d, two_s, eps, delta.g, delta.f);
  }
  if (views.symmetric) store.combine(kProductX, 0, d, true, {{kProductY}});  // (H_xx + H_yx + H_xy + H_yy)·A
  if (want_x) store.read_into(kProductX, views.product_x, views.product_x_name);
  if (want_y && !views.symmetric) store.read_into(kProductY, views.product_y, views.product_y_name);
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
  joint_hvp_views views;
  if (!direction_x.empty()) check_hvp_direction(direction_x, n, d, name + " (X direction)");
  if (!direction_y.empty()) check_hvp_direction(direction_y, m, d, name + " (Y direction)");
  views.direction_x = direction_x;
  views.direction_y = direction_y;
  views.product_x = out_x;
  views.product_y = out_y;
  views.direction_x_name = name + " (X direction)";
  views.direction_y_name = name + " (Y direction)";
  views.product_x_name = name + " out_x";
  views.product_y_name = name + " out_y";
  return joint_hvp_products(context, views, settings);
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
  check_hvp_direction(direction, n, d, name);
  joint_hvp_views views;
  views.direction_x = views.direction_y = direction;
  views.product_x = out;
  views.direction_x_name = views.direction_y_name = views.product_x_name = name;
  views.symmetric = true;
  return joint_hvp_products(context, views, settings);
}

}  // namespace flashsinkhorn::detail
