#include "core/potential_vjp.hpp"

#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "core/float64_replica.hpp"
#include "core/normalisation_chain_rules.hpp"
#include "core/potential_system.hpp"
#include "core/solved_plan.hpp"
#include "core/view_io.hpp"
#include "flashsinkhorn/error.hpp"

namespace flashsinkhorn::detail {
namespace {

std::string text(std::string head, const std::string& tail) {
  head.append(tail);
  return head;
}

void validate_settings(const potential_vjp_options& settings) {
  if (!std::isfinite(settings.tolerance) || settings.tolerance < 0) {
    throw invalid_argument(text("potential_vjp: tolerance must be a finite number ≥ 0, got ",
                                std::to_string(settings.tolerance)));
  }
  if (settings.max_iterations < 1) {
    throw invalid_argument(text("potential_vjp: max_iterations must be ≥ 1, got ",
                                std::to_string(settings.max_iterations)));
  }
  if (!std::isfinite(settings.ridge) || settings.ridge < 0) {
    throw invalid_argument(text("potential_vjp: ridge must be a finite number ≥ 0, got ", std::to_string(settings.ridge)));
  }
}

void require_supported(const potential_vjp_context& context) {
  const options& o = context.solve_options;
  if (o.reach_x || o.reach_y) {
    throw unsupported(
        "potential_vjp: implicit differentiation is implemented for balanced problems only "
        "(reach_x / reach_y is set)");
  }
  const auto require_positive = [](const std::vector<double>& w, const char* name) {
    for (std::size_t i = 0; i < w.size(); ++i) {
      if (!(w[i] > 0)) {
        std::string message = "potential_vjp: ";
        message.append(name).append(" has a zero weight at index ").append(std::to_string(i));
        message.append("; implicit differentiation needs positive weights (drop the point instead)");
        throw unsupported(message);
      }
    }
  };
  require_positive(context.inputs.kernel.x.weights, "a");
  require_positive(context.inputs.kernel.y.weights, "b");
}

// Shapes and memory space of the outputs, before any work (write_* checks them again).
void validate_output(const mutable_matrix_view& out, std::int64_t rows, std::int64_t cols, const char* name) {
  if (out.empty()) return;
  if (out.rows != rows || out.cols != cols) {
    std::string message = "potential_vjp: ";
    message.append(name).append(" is ").append(std::to_string(out.rows)).append("×").append(std::to_string(out.cols));
    message.append(", expected ").append(std::to_string(rows)).append("×").append(std::to_string(cols));
    throw invalid_argument(message);
  }
  if (out.space != memory_space::host) throw unsupported(text(text("potential_vjp: ", name), " must live in host memory"));
}

void validate_output(const mutable_vector_view& out, std::int64_t size, const char* name) {
  if (out.empty()) return;
  if (out.size != size) {
    std::string message = "potential_vjp: ";
    message.append(name).append(" has ").append(std::to_string(out.size)).append(" elements, expected ");
    message.append(std::to_string(size));
    throw invalid_argument(message);
  }
  if (out.space != memory_space::host) throw unsupported(text(text("potential_vjp: ", name), " must live in host memory"));
}

// ∂L/∂f or ∂L/∂g: `count` finite values; an empty view means zeros.
std::vector<double> read_cotangent(const vector_view& view, std::int64_t count, const char* name,
                                   const char* cloud) {
  if (view.empty()) return std::vector<double>(static_cast<std::size_t>(count), 0.0);
  if (view.size != count) {
    std::string message = "potential_vjp: ";
    message.append(name).append(" has ").append(std::to_string(view.size)).append(" values but ");
    message.append(cloud).append(" has ").append(std::to_string(count)).append(" points");
    throw invalid_argument(message);
  }
  std::vector<double> values = read_vector(view, name);
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (!std::isfinite(values[i])) {
      std::string message = "potential_vjp: ";
      message.append(name).append(" is not finite at index ").append(std::to_string(i));
      throw invalid_argument(message);
    }
  }
  return values;
}

// The adjoint λ = H⁺(ḟ, ġ) (core/potential_system.hpp) and how CG got there.
struct adjoint {
  std::vector<double> f, g;
  potential_vjp_report report;
  bool sparse_fell_short = false;  // (potential_system.hpp) f, g unusable: redo in float64
};

adjoint solve_adjoint(const solved_plan& plan, const std::vector<double>& a, std::vector<double> df,
                      std::vector<double> dg, const potential_vjp_options& settings, bool redone_in_float64) {
  potential_system_settings system{settings.tolerance, settings.max_iterations, settings.preconditioner, settings.ridge};
  system.stop_when_sparse_falls_short = redone_in_float64;
  potential_system_solution z = solve_potential_system(plan, a, std::move(df), std::move(dg), system);
  adjoint out;
  out.f = std::move(z.f);
  out.g = std::move(z.g);
  out.report.iterations = z.iterations;
  out.report.relative_residual = z.relative_residual;
  out.report.converged = z.converged;
  out.report.gauge_defect = z.gauge_defect;
  out.sparse_fell_short = z.sparse_fell_short;
  return out;
}

// The gradients of one side, from the pass over the other cloud Z (points z, adjoint λ_Z) stacked
// as V = [Z, λ_Z∘Z, λ_Z] (columns [0, d) Z, [d, 2d) λ_Z∘Z, 2d λ_Z). With A the pass's rows,
//   ∂L/∂p_i = 2s·w_i·(λ_i (μ_i p_i − A_i[0,d)) + A_i[2d] p_i − A_i[d,2d)),   ∂L/∂(weight)_i = −ε A_i[2d] / ν_i,
// where X: A = diag(1/a)·P·V(Y), w = a, μ = 1, ν = 1;  Y: A = Pᵀ·V(X), w = 1, μ = c = Pᵀ1, ν = b.
// The sides are mirror images; the factors of 1 are exact, so each side computes what it always did.
void assemble_side_gradients(side which, const potential_vjp_context& context, const solved_plan& plan,
                             const adjoint& lambda, const potential_vjp_outputs& outputs) {
  const bool on_x = which == side::x;
  const mutable_matrix_view& grad_points = on_x ? outputs.grad_x : outputs.grad_y;
  const mutable_vector_view& grad_weights = on_x ? outputs.grad_a : outputs.grad_b;
  const bool want_points = !grad_points.empty(), want_weights = !grad_weights.empty();
  if (!want_points && !want_weights) return;

  const prepared_inputs& in = context.inputs;
  const prepared_cloud& own = on_x ? in.kernel.x : in.kernel.y;
  const prepared_cloud& other = on_x ? in.kernel.y : in.kernel.x;
  const std::vector<double>& own_lambda = on_x ? lambda.f : lambda.g;
  const std::vector<double>& other_lambda = on_x ? lambda.g : lambda.f;
  // d: the kernels' dimension; the caller's points are its first in.dim columns (a label cost
  // appends constant coordinates, whose gradient columns are dropped).
  const std::int64_t count = own.count, other_count = other.count, d = in.kernel.x.dim;
  const double two_s = 2 * in.kernel.cost_scale;
  const double eps = context.eps;

  const std::int64_t k = 2 * d + 1;
  std::vector<double> values(static_cast<std::size_t>(other_count * k));
  for (std::int64_t j = 0; j < other_count; ++j) {
    for (std::int64_t c = 0; c < d; ++c) {
      values[j * k + c] = other.points[j * d + c];
      values[j * k + d + c] = other_lambda[j] * other.points[j * d + c];
    }
    values[j * k + 2 * d] = other_lambda[j];
  }
  const std::vector<double> rows = on_x ? plan.row_average(values, k) : plan.apply_transpose(values, k);
  const std::vector<double>& column_mass = plan.column_mass();

  if (want_points) {
    std::vector<double> grad(static_cast<std::size_t>(count * d));
    for (std::int64_t i = 0; i < count; ++i) {
      const double weight = on_x ? own.weights[i] : 1.0;  // w_i
      const double mass = on_x ? 1.0 : column_mass[i];    // μ_i
      const double lambda_sum = rows[i * k + 2 * d];
      for (std::int64_t c = 0; c < d; ++c) {
        const double p = own.points[i * d + c];
        grad[i * d + c] = two_s * weight *
                          (own_lambda[i] * (mass * p - rows[i * k + c]) + lambda_sum * p - rows[i * k + d + c]);
      }
    }
    if (context.solve_options.cost == cost_kind::cosine) {
      through_cosine_normalisation(grad, on_x ? in.x_input : in.y_input, on_x ? in.x_norms : in.y_norms, d);
    }
    write_leading_columns(grad_points, grad, count, d, on_x ? "potential_vjp grad_x" : "potential_vjp grad_y");
  }
  if (want_weights) {
    std::vector<double> grad(static_cast<std::size_t>(count));
    for (std::int64_t i = 0; i < count; ++i) {
      const double divisor = on_x ? 1.0 : own.weights[i];  // ν_i
      grad[i] = -eps * rows[i * k + 2 * d] / divisor;
    }
    if (context.solve_options.normalize_weights) {
      through_weight_normalisation(grad, own.weights, on_x ? in.mass_a : in.mass_b);
    }
    write_vector(grad_weights, grad, on_x ? "potential_vjp grad_a" : "potential_vjp grad_b");
  }
}

}  // namespace

potential_vjp_report potential_vjp(const potential_vjp_context& context, const vector_view& df_view,
                                   const vector_view& dg_view, const potential_vjp_outputs& outputs,
                                   const potential_vjp_options& settings) {
  validate_settings(settings);
  require_supported(context);
  const prepared_inputs& in = context.inputs;
  const prepared_cloud& x = in.kernel.x;
  const prepared_cloud& y = in.kernel.y;
  const std::int64_t n = x.count, m = y.count;
  const std::vector<double> df = read_cotangent(df_view, n, "df", "X");
  const std::vector<double> dg = read_cotangent(dg_view, m, "dg", "Y");
  const bool want_x = !outputs.grad_x.empty(), want_y = !outputs.grad_y.empty();
  const bool want_a = !outputs.grad_a.empty(), want_b = !outputs.grad_b.empty();
  if (!want_x && !want_y && !want_a && !want_b) {
    throw invalid_argument("potential_vjp: no output requested; pass at least one of grad_x, grad_y, grad_a, grad_b");
  }
  validate_output(outputs.grad_x, n, in.dim, "grad_x");
  validate_output(outputs.grad_y, m, in.dim, "grad_y");
  validate_output(outputs.grad_a, n, "grad_a");
  validate_output(outputs.grad_b, m, "grad_b");

  const auto this_product = [&](const potential_vjp_context& on) {
    return potential_vjp(on, df_view, dg_view, outputs, settings);
  };
  // An earlier product of this solve fell short, or the plan foresees it (float64_replica.hpp).
  if (starts_in_float64(context, settings.preconditioner == cg_preconditioner::sparse_plan))
    return on_float64_replica(context, this_product);
  const solved_plan plan(context.compute, in.kernel, context.eps);
  adjoint lambda = solve_adjoint(plan, x.weights, df, dg, settings, redone_in_float64(context));
  if (lambda.sparse_fell_short) {  // the whole product again, on float64 passes (float64_replica.hpp)
    potential_vjp_report again = on_float64_replica(context, this_product);
    again.iterations += lambda.report.iterations;
    again.plan_passes += plan.passes();
    return again;
  }

  assemble_side_gradients(side::x, context, plan, lambda, outputs);
  assemble_side_gradients(side::y, context, plan, lambda, outputs);
  lambda.report.plan_passes = plan.passes();
  return lambda.report;
}

}  // namespace flashsinkhorn::detail
