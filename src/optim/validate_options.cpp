#include "optim/validate_options.hpp"

#include <charconv>
#include <cmath>
#include <string>

#include "flashsinkhorn/error.hpp"
#include "optim/vector_ops.hpp"

namespace flashsinkhorn::optim::detail {
namespace {

// The shortest text that reads back as v (std::to_chars: no locale, no iostream state).
std::string str(double v) {
  char text[32];
  const auto [end, error] = std::to_chars(text, text + sizeof text, v);
  return error == std::errc{} ? std::string(text, end) : std::string("?");
}

[[noreturn]] void fail(std::string_view field, std::string_view requirement, const std::string& got) {
  std::string message(field);
  message.append(" must be ").append(requirement).append(", got ").append(got);
  throw invalid_argument(message);
}

void require_positive(double value, std::string_view field) {
  if (!std::isfinite(value) || value <= 0) fail(field, "a positive finite number", str(value));
}

// A wall-time budget: > 0, +∞ allowed (no budget); NaN refused.
void require_budget(double seconds, std::string_view field) {
  if (!(seconds > 0)) fail(field, "> 0 seconds (+infinity: no limit)", str(seconds));
}

void require_at_least_one(int value, std::string_view field) {
  if (value < 1) fail(field, "at least 1", std::to_string(value));
}

// lower < value < upper (open) or lower ≤ value < upper (closed_lower).
void require_between(double value, double lower, double upper, bool closed_lower, std::string_view field) {
  const bool above = closed_lower ? value >= lower : value > lower;
  if (!(above && value < upper)) {
    std::string range(closed_lower ? "in [" : "in (");
    range.append(str(lower)).append(", ").append(str(upper)).append(")");
    fail(field, range, str(value));
  }
}

void validate_forcing(const forcing_options& forcing, std::string_view owner) {
  std::string prefix(owner);
  prefix.append(".forcing.");
  require_between(forcing.initial, 0, 1, false, prefix + "initial");
  require_between(forcing.maximum, 0, 1, false, prefix + "maximum");
  if (!(forcing.gamma > 0 && forcing.gamma <= 1)) fail(prefix + "gamma", "in (0, 1]", str(forcing.gamma));
  if (!(forcing.exponent > 1 && forcing.exponent <= 2)) fail(prefix + "exponent", "in (1, 2]", str(forcing.exponent));
}

}  // namespace

void validate(const lanczos_options& options, int dimension) {
  if (dimension < 1) fail("the dimension p of the operator", "at least 1", std::to_string(dimension));
  require_at_least_one(options.max_steps, "lanczos_options.max_steps");
  require_positive(options.tolerance, "lanczos_options.tolerance");
  if (std::isnan(options.stop_below)) fail("lanczos_options.stop_below", "a number or −infinity", "NaN");
  if (!std::isfinite(options.start_noise) || options.start_noise < 0) {
    fail("lanczos_options.start_noise", "finite and ≥ 0", str(options.start_noise));
  }
  if (!options.start.empty()) {
    if (options.start.size() != static_cast<std::size_t>(dimension)) {
      fail("lanczos_options.start", std::string("empty or of size p = ").append(std::to_string(dimension)),
           std::string("size ").append(std::to_string(options.start.size())));
    }
    if (!all_finite(options.start) || norm2(options.start) == 0) {
      fail("lanczos_options.start", "finite and not all zero", "a zero or non-finite vector");
    }
  }
}

void validate(const newton_cg_options& options) {
  require_positive(options.gradient_tolerance, "newton_cg_options.gradient_tolerance");
  require_at_least_one(options.max_iterations, "newton_cg_options.max_iterations");
  require_budget(options.max_seconds, "newton_cg_options.max_seconds");
  require_at_least_one(options.max_cg_iterations, "newton_cg_options.max_cg_iterations");
  validate_forcing(options.forcing, "newton_cg_options");
  require_between(options.armijo_c1, 0, 1, false, "newton_cg_options.armijo_c1");
  require_between(options.backtrack_factor, 0, 1, false, "newton_cg_options.backtrack_factor");
  require_at_least_one(options.max_backtracks, "newton_cg_options.max_backtracks");
}

void validate(const trust_region_options& options) {
  require_positive(options.gradient_tolerance, "trust_region_options.gradient_tolerance");
  require_at_least_one(options.max_iterations, "trust_region_options.max_iterations");
  require_budget(options.max_seconds, "trust_region_options.max_seconds");
  require_at_least_one(options.max_cg_iterations, "trust_region_options.max_cg_iterations");
  validate_forcing(options.forcing, "trust_region_options");
  require_positive(options.max_radius, "trust_region_options.max_radius");
  require_positive(options.initial_radius, "trust_region_options.initial_radius");
  if (options.initial_radius > options.max_radius) {
    fail("trust_region_options.initial_radius", std::string("≤ max_radius = ").append(str(options.max_radius)),
         str(options.initial_radius));
  }
  require_positive(options.min_radius, "trust_region_options.min_radius");
  if (options.min_radius >= options.initial_radius) {
    fail("trust_region_options.min_radius", std::string("< initial_radius = ").append(str(options.initial_radius)),
         str(options.min_radius));
  }
  require_between(options.expand_above, 0, 1, false, "trust_region_options.expand_above");
  require_between(options.shrink_below, 0, options.expand_above, false, "trust_region_options.shrink_below");
  require_between(options.acceptance_ratio, 0, options.shrink_below, true, "trust_region_options.acceptance_ratio");
  require_between(options.shrink_factor, 0, 1, false, "trust_region_options.shrink_factor");
  if (!(options.expand_factor > 1) || !std::isfinite(options.expand_factor)) {
    fail("trust_region_options.expand_factor", "a finite number > 1", str(options.expand_factor));
  }
  if (options.dense_model_dimension < 0) {
    fail("trust_region_options.dense_model_dimension", "≥ 0", std::to_string(options.dense_model_dimension));
  }
}

void validate(const adam_options& options) {
  require_positive(options.learning_rate, "adam_options.learning_rate");
  require_between(options.beta1, 0, 1, true, "adam_options.beta1");
  require_between(options.beta2, 0, 1, true, "adam_options.beta2");
  require_positive(options.epsilon, "adam_options.epsilon");
  require_positive(options.gradient_tolerance, "adam_options.gradient_tolerance");
  require_at_least_one(options.max_iterations, "adam_options.max_iterations");
  require_budget(options.max_seconds, "adam_options.max_seconds");
}

void validate(const hybrid_options& options) {
  validate(options.adam);
  require_at_least_one(options.check_every, "hybrid_options.check_every");
  if (std::isnan(options.check_gradient_norm) || options.check_gradient_norm <= 0)
    fail("hybrid_options.check_gradient_norm", "> 0 (+∞: no gate)", str(options.check_gradient_norm));
  require_budget(options.max_seconds, "hybrid_options.max_seconds");
  require_at_least_one(options.lanczos.max_steps, "hybrid_options.lanczos.max_steps");
  require_positive(options.lanczos.tolerance, "hybrid_options.lanczos.tolerance");
  require_positive(options.negative_tolerance, "hybrid_options.negative_tolerance");
  if (!std::isfinite(options.switch_threshold) || options.switch_threshold < -options.negative_tolerance) {
    fail("hybrid_options.switch_threshold",
         std::string("finite and ≥ −negative_tolerance = ").append(str(-options.negative_tolerance)),
         str(options.switch_threshold));
  }
  if (options.second_order == second_order_method::newton_cg) {
    validate(options.newton_cg);
  } else {
    validate(options.trust_region);
  }
  if (!options.adam.initial.first.empty() || options.adam.initial.steps != 0) {
    fail("hybrid_options.adam.initial", "empty (a hybrid resumes from hybrid_options.resume.adam)",
         std::to_string(options.adam.initial.steps) + " steps");
  }
  const hybrid_state& resume = options.resume;
  if (resume.checks < 0) fail("hybrid_options.resume.checks", "≥ 0", std::to_string(resume.checks));
  if (resume.last_check < -1 || resume.last_check > resume.adam.steps)
    fail("hybrid_options.resume.last_check",
         "−1 or an Adam step ≤ resume.adam.steps = " + std::to_string(resume.adam.steps),
         std::to_string(resume.last_check));
  if (resume.switch_iteration < -1)
    fail("hybrid_options.resume.switch_iteration", "≥ −1", std::to_string(resume.switch_iteration));
  if (!std::isfinite(resume.trust_radius) || resume.trust_radius < 0)
    fail("hybrid_options.resume.trust_radius", "finite and ≥ 0", str(resume.trust_radius));
  if (resume.trust_radius > 0 && options.second_order == second_order_method::trust_region &&
      resume.trust_radius <= options.trust_region.min_radius) {
    fail("hybrid_options.resume.trust_radius",
         std::string("> trust_region.min_radius = ").append(str(options.trust_region.min_radius)),
         str(resume.trust_radius));
  }
}

void validate_objective(const objective& f, std::size_t dimension, bool needs_hvp, std::string_view method) {
  if (dimension == 0) {
    std::string message(method);
    throw invalid_argument(message.append(": theta0 is empty; the parameter vector needs p ≥ 1 entries"));
  }
  if (!f.gradient) {
    std::string message(method);
    throw invalid_argument(message.append(" needs objective.gradient (it returns f and writes ∇f); it is empty"));
  }
  if (needs_hvp && !f.hvp) {
    std::string message(method);
    throw invalid_argument(message.append(" needs objective.hvp (the Hessian-vector product); it is empty"));
  }
}

void validate_initial_point(double value, const_span gradient, std::string_view method) {
  if (!std::isfinite(value) || !all_finite(gradient)) {
    std::string message(method);
    message.append(": f(theta0) = ").append(str(value)).append(
        " or its gradient is not finite; start from a point where the objective is defined");
    throw invalid_argument(message);
  }
}

}  // namespace flashsinkhorn::optim::detail
