// flashsinkhorn._core optimisers (flashsinkhorn::optim, include/flashsinkhorn/optim/): Lanczos
// extremes, Newton-CG and the trust region over θ ∈ R^p, with the operator, gradient and HVP given
// as Python callables on 1-d float64 NumPy arrays. The library runs on the calling thread with the
// GIL held (every step calls back into Python); the arrays handed to the callables are copies that
// they may keep.
#include "optim.hpp"

#include <nanobind/ndarray.h>
#include <nanobind/stl/function.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "flashsinkhorn/error.hpp"
#include "flashsinkhorn/optimize.hpp"

#include "errors.hpp"

namespace flashsinkhorn::python {
namespace {

namespace optim = flashsinkhorn::optim;
using namespace nb::literals;

// A fresh float64 NumPy vector holding `values`.
nb::object numpy_copy(optim::const_span values) {
  nb::module_ numpy = nb::module_::import_("numpy");
  nb::object array = numpy.attr("empty")(values.size(), "dtype"_a = "float64");
  auto view = nb::cast<nb::ndarray<double, nb::ndim<1>, nb::c_contig, nb::device::cpu>>(array);
  std::copy(values.begin(), values.end(), view.data());
  return array;
}

// Copies a callable's result (anything numpy.asarray takes, of p float64 values) into `out`.
void copy_result(nb::handle result, optim::mutable_span out, const char* what) {
  nb::module_ numpy = nb::module_::import_("numpy");
  nb::object flat = numpy.attr("ascontiguousarray")(result, "dtype"_a = "float64").attr("ravel")();
  auto view = nb::cast<nb::ndarray<const double, nb::ndim<1>, nb::c_contig, nb::device::cpu>>(flat);
  if (view.shape(0) != out.size()) {
    std::string message(what);
    message.append(" returned ").append(std::to_string(view.shape(0))).append(" values, expected ");
    message.append(std::to_string(out.size()));
    throw invalid_argument(message);
  }
  std::copy(view.data(), view.data() + out.size(), out.begin());
}

// callback(args...); flashsinkhorn.StopOptimization raised in it becomes optim::stop_requested, which
// the optimisers turn into status 'stopped' (objective.hpp).
template <class... Args>
nb::object call(const nb::object& callback, Args&&... args) {
  try {
    return callback(std::forward<Args>(args)...);
  } catch (nb::python_error& e) {
    if (is_stop_optimization(e)) throw optim::stop_requested(e.what());
    throw;
  }
}

// objective from Python: value(θ) → float (may be None), gradient(θ) → (f, g), hvp(θ, v) → Hv (None for Adam).
optim::objective objective_of(nb::object value, nb::object gradient, nb::object hvp) {
  optim::objective f;
  if (!value.is_none())
    f.value = [value](optim::const_span theta) { return nb::cast<double>(call(value, numpy_copy(theta))); };
  f.gradient = [gradient](optim::const_span theta, optim::mutable_span g) {
    const nb::tuple pair = nb::cast<nb::tuple>(call(gradient, numpy_copy(theta)));
    copy_result(pair[1], g, "gradient");
    return nb::cast<double>(pair[0]);
  };
  if (!hvp.is_none())
    f.hvp = [hvp](optim::const_span theta, optim::const_span v, optim::mutable_span product) {
      copy_result(call(hvp, numpy_copy(theta), numpy_copy(v)), product, "hvp");
    };
  return f;
}

nb::dict moments_of(const optim::adam_moments& m) {
  nb::dict out;
  out["first"] = numpy_copy(m.first);
  out["second"] = numpy_copy(m.second);
  out["steps"] = m.steps;
  return out;
}

nb::dict report_of(const optim::optimizer_result& r) {
  nb::dict out;
  out["theta"] = numpy_copy(r.theta);
  out["value"] = r.value;
  out["gradient_norm"] = r.gradient_norm;
  out["iterations"] = r.iterations;
  out["status"] = std::string(optim::to_string(r.status));
  out["evaluations"] = nb::make_tuple(r.evaluations.values, r.evaluations.gradients, r.evaluations.hvps);
  nb::list history;
  for (const optim::optimizer_iteration& it : r.history)
    history.append(nb::make_tuple(it.iteration, it.value, it.gradient_norm, it.cg_iterations, it.step_size,
                                  it.negative_curvature, it.trust_radius, it.accepted));
  out["history"] = history;
  out["trust_radius"] = r.trust_radius;
  return out;
}

nb::tuple lambda_sample_of(const optim::lambda_sample& s) {
  return nb::make_tuple(s.iteration, s.lambda_min, s.residual, s.lanczos_steps, s.converged, s.certified_negative);
}

optim::second_order_method second_order_of(const std::string& name) {
  if (name == "trust_region") return optim::second_order_method::trust_region;
  if (name == "newton") return optim::second_order_method::newton_cg;
  throw invalid_argument("hybrid: second_order must be 'trust_region' or 'newton', got '" + name + "'");
}

}  // namespace

void bind_optimizers(nb::module_& m) {
  m.def(
      "lanczos_extremes",
      [](nb::object apply, int dimension, int max_steps, double tolerance, bool smallest_only, std::uint64_t seed) {
        optim::lanczos_options o;
        o.max_steps = max_steps;
        o.tolerance = tolerance;
        o.target = smallest_only ? optim::lanczos_target::smallest : optim::lanczos_target::both;
        o.seed = seed;
        const optim::symmetric_operator op = [apply](optim::const_span x, optim::mutable_span y) {
          copy_result(apply(numpy_copy(x)), y, "apply");
        };
        const optim::lanczos_result r = optim::lanczos_extremes(op, dimension, o);
        nb::dict out;
        out["lambda_min"] = r.lambda_min;
        out["lambda_max"] = r.lambda_max;
        out["ritz_vector_min"] = numpy_copy(r.ritz_vector_min);
        out["residual_min"] = r.residual_min;
        out["residual_max"] = r.residual_max;
        out["steps"] = r.steps;
        out["converged"] = r.converged;
        return out;
      },
      "apply"_a, "dimension"_a, "max_steps"_a, "tolerance"_a, "smallest_only"_a, "seed"_a,
      "flashsinkhorn::optim::lanczos_extremes: extreme eigenvalues of the symmetric operator v ↦ apply(v).");
  m.def(
      "newton_cg",
      [](nb::object value, nb::object gradient, nb::object hvp, std::vector<double> theta0, double gradient_tolerance,
         int max_iterations, int max_cg_iterations, double max_seconds) {
        optim::newton_cg_options o;
        o.gradient_tolerance = gradient_tolerance;
        o.max_iterations = max_iterations;
        o.max_cg_iterations = max_cg_iterations;
        o.max_seconds = max_seconds;
        return report_of(optim::newton_cg(objective_of(value, gradient, hvp), std::move(theta0), o));
      },
      "value"_a.none(), "gradient"_a, "hvp"_a, "theta0"_a, "gradient_tolerance"_a, "max_iterations"_a,
      "max_cg_iterations"_a, "max_seconds"_a,
      "flashsinkhorn::optim::newton_cg (truncated Newton, Armijo, negative curvature).");
  m.def(
      "trust_region",
      [](nb::object value, nb::object gradient, nb::object hvp, std::vector<double> theta0, double gradient_tolerance,
         int max_iterations, int max_cg_iterations, double initial_radius, double max_seconds,
         int dense_model_dimension) {
        optim::trust_region_options o;
        o.dense_model_dimension = dense_model_dimension;
        o.gradient_tolerance = gradient_tolerance;
        o.max_iterations = max_iterations;
        o.max_cg_iterations = max_cg_iterations;
        o.initial_radius = initial_radius;
        o.max_seconds = max_seconds;
        o.max_radius = std::max(o.max_radius, initial_radius);
        return report_of(optim::trust_region(objective_of(value, gradient, hvp), std::move(theta0), o));
      },
      "value"_a.none(), "gradient"_a, "hvp"_a, "theta0"_a, "gradient_tolerance"_a, "max_iterations"_a,
      "max_cg_iterations"_a, "initial_radius"_a, "max_seconds"_a, "dense_model_dimension"_a,
      "flashsinkhorn::optim::trust_region (Steihaug–Toint CG, or the exact step on a dense model).");
  m.def(
      "adam",
      [](nb::object gradient, std::vector<double> theta0, double learning_rate, double beta1, double beta2,
         double epsilon, double gradient_tolerance, int max_iterations, double max_seconds,
         std::vector<double> initial_first, std::vector<double> initial_second, int initial_steps) {
        optim::adam_options o;
        o.initial = {std::move(initial_first), std::move(initial_second), initial_steps};
        o.learning_rate = learning_rate;
        o.beta1 = beta1;
        o.beta2 = beta2;
        o.epsilon = epsilon;
        o.gradient_tolerance = gradient_tolerance;
        o.max_iterations = max_iterations;
        o.max_seconds = max_seconds;
        const optim::adam_result r = optim::adam(objective_of(nb::none(), gradient, nb::none()), std::move(theta0), o);
        nb::dict out = report_of(r);
        out["state"] = moments_of(r.moments);
        return out;
      },
      "gradient"_a, "theta0"_a, "learning_rate"_a, "beta1"_a, "beta2"_a, "epsilon"_a, "gradient_tolerance"_a,
      "max_iterations"_a, "max_seconds"_a, "initial_first"_a, "initial_second"_a, "initial_steps"_a,
      "flashsinkhorn::optim::adam (bias-corrected Adam; only the gradient is used).");
  m.def(
      "hybrid",
      [](nb::object value, nb::object gradient, nb::object hvp, std::vector<double> theta0, double learning_rate,
         double beta1, double beta2, int adam_iterations, double adam_tolerance, int check_every,
         double check_gradient_norm, double negative_tolerance, double switch_threshold,
         const std::string& second_order,
         double gradient_tolerance, std::optional<int> max_iterations, int max_cg_iterations, double initial_radius,
         double forcing_maximum, int lanczos_steps, double lanczos_tolerance, bool warm_lanczos, std::uint64_t seed,
         double max_seconds, std::vector<double> resume_first, std::vector<double> resume_second, int resume_steps,
         std::vector<double> resume_ritz_vector, int resume_checks, int resume_last_check,
         int resume_switch_iteration, double resume_trust_radius, int dense_model_dimension, bool check_at_start) {
        optim::hybrid_options o;
        o.check_at_start = check_at_start;
        o.trust_region.dense_model_dimension = dense_model_dimension;
        o.resume.adam = {std::move(resume_first), std::move(resume_second), resume_steps};
        o.resume.ritz_vector = std::move(resume_ritz_vector);
        o.resume.checks = resume_checks;
        o.resume.last_check = resume_last_check;
        o.resume.switch_iteration = resume_switch_iteration;
        o.resume.trust_radius = resume_trust_radius;
        o.adam.learning_rate = learning_rate;
        o.adam.beta1 = beta1;
        o.adam.beta2 = beta2;
        o.adam.gradient_tolerance = adam_tolerance;
        o.adam.max_iterations = adam_iterations;
        o.check_every = check_every;
        o.check_gradient_norm = check_gradient_norm;
        o.negative_tolerance = negative_tolerance;
        o.switch_threshold = switch_threshold;
        o.second_order = second_order_of(second_order);
        o.newton_cg.gradient_tolerance = gradient_tolerance;
        o.newton_cg.max_cg_iterations = max_cg_iterations;
        o.trust_region.gradient_tolerance = gradient_tolerance;
        o.trust_region.max_cg_iterations = max_cg_iterations;
        o.trust_region.initial_radius = initial_radius;
        o.trust_region.max_radius = std::max(o.trust_region.max_radius, initial_radius);
        for (optim::forcing_options* forcing : {&o.newton_cg.forcing, &o.trust_region.forcing}) {
          forcing->maximum = forcing_maximum;
          forcing->initial = std::min(forcing->initial, forcing_maximum);
        }
        if (max_iterations) {
          o.newton_cg.max_iterations = *max_iterations;
          o.trust_region.max_iterations = *max_iterations;
        }
        o.lanczos.max_steps = lanczos_steps;
        o.lanczos.tolerance = lanczos_tolerance;
        o.lanczos.seed = seed;
        o.warm_lanczos = warm_lanczos;
        o.max_seconds = max_seconds;
        const optim::hybrid_result r = optim::hybrid(objective_of(value, gradient, hvp), std::move(theta0), o);
        nb::dict out;
        out["theta"] = numpy_copy(r.theta);
        out["value"] = r.value;
        out["gradient_norm"] = r.gradient_norm;
        out["status"] = std::string(optim::to_string(r.status));
        out["switch_iteration"] = r.switch_iteration;
        nb::list trace;
        for (const optim::lambda_sample& sample : r.lambda_trace) trace.append(lambda_sample_of(sample));
        out["lambda_trace"] = trace;
        out["adam"] = report_of(r.adam_phase);
        out["second_order"] = r.switch_iteration < 0 ? nb::object(nb::none()) : nb::object(report_of(r.second_order_phase));
        out["evaluations"] = nb::make_tuple(r.evaluations.values, r.evaluations.gradients, r.evaluations.hvps);
        nb::dict state;
        state["adam"] = moments_of(r.state.adam);
        state["ritz_vector"] = numpy_copy(r.state.ritz_vector);
        state["checks"] = r.state.checks;
        state["last_check"] = r.state.last_check;
        state["switch_iteration"] = r.state.switch_iteration;
        state["trust_radius"] = r.state.trust_radius;
        out["state"] = state;
        return out;
      },
      "value"_a.none(), "gradient"_a, "hvp"_a, "theta0"_a, "learning_rate"_a, "beta1"_a, "beta2"_a,
      "adam_iterations"_a, "adam_tolerance"_a, "check_every"_a, "check_gradient_norm"_a, "negative_tolerance"_a,
      "switch_threshold"_a,
      "second_order"_a, "gradient_tolerance"_a, "max_iterations"_a.none(), "max_cg_iterations"_a, "initial_radius"_a,
      "forcing_maximum"_a, "lanczos_steps"_a, "lanczos_tolerance"_a, "warm_lanczos"_a, "seed"_a, "max_seconds"_a,
      "resume_first"_a,
      "resume_second"_a, "resume_steps"_a, "resume_ritz_vector"_a, "resume_checks"_a, "resume_last_check"_a,
      "resume_switch_iteration"_a,
      "resume_trust_radius"_a, "dense_model_dimension"_a, "check_at_start"_a,
      "flashsinkhorn::optim::hybrid (Adam while λ_min(∇²f) ≤ threshold, then trust region or Newton-CG).");
}

}  // namespace flashsinkhorn::python
