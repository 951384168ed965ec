#include "core/validate.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <string>

#include "flashsinkhorn/error.hpp"

namespace flashsinkhorn::detail {
namespace {

[[noreturn]] void fail(const std::string& message) { throw invalid_argument(message); }

// The shortest text that reads back as v. std::to_chars, not an ostringstream: no locale, and no
// iostream static state (the Python extension built on the device crashed, under Python 3.12, in the
// first test whose message went through an ostringstream; the messages before it all worked).
std::string str(double v) {
  char text[32];
  const auto [end, error] = std::to_chars(text, text + sizeof text, v);
  return error == std::errc{} ? std::string(text, end) : std::string("?");
}

void require_positive_finite(double value, const char* name) {
  if (!std::isfinite(value) || value <= 0) fail(std::string(name) + " must be a positive finite number, got " + str(value));
}

void validate_cloud_shape(const matrix_view& v, const char* name) {
  if (v.rows <= 0) fail(std::string(name) + " is empty (" + std::to_string(v.rows) + " points)");
  if (v.cols <= 0) fail(std::string(name) + " has dimension d = " + std::to_string(v.cols) + "; need d ≥ 1");
}

void validate_weight_shape(const vector_view& w, std::int64_t count, const char* name, const char* cloud) {
  if (w.empty()) return;
  if (w.size != count) {
    fail(std::string(name) + " has " + std::to_string(w.size) + " weights but " + cloud + " has " +
         std::to_string(count) + " points");
  }
}

// Shapes, weights and the cost kind of a label cost; its values are checked once read.
void validate_label_shape(const label_cost& labels, const problem& p, const options& o) {
  if (labels.empty()) return;
  if (labels.x_labels.empty() || labels.y_labels.empty() || labels.label_distances.empty()) {
    fail("the label cost needs x_labels, y_labels and label_distances (W) together; one of them is empty");
  }
  if (o.cost == cost_kind::cosine) {
    throw unsupported("the label cost is defined for the squared-Euclidean cost only, not the cosine cost");
  }
  if (labels.x_labels.size != p.x.rows) {
    fail("x_labels has " + std::to_string(labels.x_labels.size) + " labels but X has " + std::to_string(p.x.rows) + " points");
  }
  if (labels.y_labels.size != p.y.rows) {
    fail("y_labels has " + std::to_string(labels.y_labels.size) + " labels but Y has " + std::to_string(p.y.rows) + " points");
  }
  const matrix_view& w = labels.label_distances;
  if (w.rows <= 0 || w.rows != w.cols) {
    std::string message = "label_distances (W) must be a non-empty square L×L matrix, got ";
    message.append(std::to_string(w.rows)).append("×").append(std::to_string(w.cols));
    fail(message);
  }
  require_positive_finite(labels.feature_weight, "label cost feature_weight (λx)");
  require_positive_finite(labels.label_weight, "label cost label_weight (λy)");
}

}  // namespace

void validate_arguments(const problem& p, const options& o) {
  validate_cloud_shape(p.x, "X");
  validate_cloud_shape(p.y, "Y");
  if (p.x.cols != p.y.cols) {
    fail("X has dimension d = " + std::to_string(p.x.cols) + " but Y has d = " + std::to_string(p.y.cols));
  }
  validate_weight_shape(p.a, p.x.rows, "a", "X");
  validate_weight_shape(p.b, p.y.rows, "b", "Y");
  validate_label_shape(p.labels, p, o);
  require_positive_finite(p.eps, "eps");
  require_positive_finite(p.cost_scale, "cost_scale");
  // Scores are scaled by 2s/ε; in float32 arithmetic that factor must itself be a float.
  if (o.precision != precision::fp64 && !(2 * p.cost_scale / p.eps < 1e30)) {
    fail("eps = " + str(p.eps) + " is too small for cost_scale = " + str(p.cost_scale) +
         " in single precision (2·cost_scale/eps overflows); raise eps or use fp64");
  }
  if (p.initial_f.empty() != p.initial_g.empty()) fail("warm start needs both initial_f and initial_g, or neither");
  if (!p.initial_f.empty()) {
    if (p.initial_f.size != p.x.rows) fail("initial_f has " + std::to_string(p.initial_f.size) + " values but X has " + std::to_string(p.x.rows) + " points");
    if (p.initial_g.size != p.y.rows) fail("initial_g has " + std::to_string(p.initial_g.size) + " values but Y has " + std::to_string(p.y.rows) + " points");
  }

  if (o.max_iterations < 0) fail("max_iterations must be ≥ 0, got " + std::to_string(o.max_iterations));
  if (o.max_iterations == 0 && !o.scaling) fail("max_iterations must be ≥ 1 when ε-scaling is off");
  if (!std::isfinite(o.tolerance) || o.tolerance < 0) fail("tolerance must be a finite number ≥ 0, got " + str(o.tolerance));
  if (o.check_every < 1) fail("check_every must be ≥ 1, got " + std::to_string(o.check_every));
  if (!(std::isfinite(o.relaxation) && o.relaxation > 0 && o.relaxation < 2)) {
    fail("relaxation must be a finite number in (0, 2) (over-relaxation ω; 1 is plain Sinkhorn), got " + str(o.relaxation));
  }
  if (o.adaptive_relaxation && o.solver == solver_kind::symmetric) {
    fail("adaptive_relaxation needs the alternating solver: the symmetric solver's averaged steps are GeomLoss's loop");
  }
  if (o.relaxation != 1 && o.solver == solver_kind::symmetric) {
    fail("relaxation = " + str(o.relaxation) + " needs the alternating solver: the symmetric solver's averaged steps are GeomLoss's loop (use relaxation = 1)");
  }
  if (o.scaling && !(*o.scaling > 0 && *o.scaling < 1)) fail("scaling must lie in (0, 1), got " + str(*o.scaling));
  if (o.diameter) require_positive_finite(*o.diameter, "diameter");
  if (o.reach_x) require_positive_finite(*o.reach_x, "reach_x");
  if (o.reach_y) require_positive_finite(*o.reach_y, "reach_y");
  if (o.cpu_threads < 0) fail("cpu_threads must be ≥ 0, got " + std::to_string(o.cpu_threads));
  if (o.cuda_device < 0) fail("cuda_device must be ≥ 0, got " + std::to_string(o.cuda_device));
}

void validate_points(const std::vector<double>& points, std::int64_t cols, std::string_view name) {
  for (std::size_t k = 0; k < points.size(); ++k) {
    if (!std::isfinite(points[k])) {
      fail(std::string(name) + " contains " + (std::isnan(points[k]) ? "NaN" : "Inf") + " at row " +
           std::to_string(static_cast<std::int64_t>(k) / cols) + ", column " +
           std::to_string(static_cast<std::int64_t>(k) % cols));
    }
  }
}

void validate_weights(const std::vector<double>& weights, std::string_view name) {
  double total = 0;
  for (std::size_t i = 0; i < weights.size(); ++i) {
    const double w = weights[i];
    if (!std::isfinite(w)) fail(std::string(name) + " contains " + (std::isnan(w) ? "NaN" : "Inf") + " at index " + std::to_string(i));
    if (w < 0) fail(std::string(name) + " has a negative weight " + str(w) + " at index " + std::to_string(i));
    total += w;
  }
  if (!(total > 0)) fail(std::string(name) + ": all weights are zero");
  if (!std::isfinite(total)) fail(std::string(name) + ": the weights sum to Inf");
}

void validate_potential(const std::vector<double>& potential, std::string_view name) {
  for (std::size_t i = 0; i < potential.size(); ++i) {
    if (!std::isfinite(potential[i])) fail(std::string(name) + " is not finite at index " + std::to_string(i));
  }
}

void validate_labels(const std::vector<std::int32_t>& labels, std::int64_t label_count, std::string_view name) {
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (labels[i] < 0 || labels[i] >= label_count) {
      std::string message(name);
      message.append(" has label ").append(std::to_string(labels[i])).append(" at index ").append(std::to_string(i));
      message.append(", outside [0, L) with L = ").append(std::to_string(label_count)).append(" (the size of W)");
      fail(message);
    }
  }
}

void validate_label_distances(std::vector<double>& distances, std::int64_t label_count) {
  const auto at = [&](std::int64_t r, std::int64_t c) -> double& { return distances[static_cast<std::size_t>(r * label_count + c)]; };
  const auto where = [](std::int64_t r, std::int64_t c) {
    std::string text("W[");
    return text.append(std::to_string(r)).append(", ").append(std::to_string(c)).append("]");
  };
  double largest = 0;
  for (std::int64_t r = 0; r < label_count; ++r) {
    for (std::int64_t c = 0; c < label_count; ++c) {
      const double v = at(r, c);
      if (!std::isfinite(v)) fail("label_distances " + where(r, c) + " is " + (std::isnan(v) ? "NaN" : "Inf"));
      if (v < 0) fail("label_distances " + where(r, c) + " = " + str(v) + " is negative; W holds distances");
      largest = std::max(largest, v);
    }
  }
  const double tolerance = 1e-9 * largest;
  for (std::int64_t r = 0; r < label_count; ++r) {
    if (at(r, r) > tolerance) {
      fail("label_distances " + where(r, r) + " = " + str(at(r, r)) + " is not 0; a label is at distance 0 from itself");
    }
    at(r, r) = 0;
    for (std::int64_t c = r + 1; c < label_count; ++c) {
      if (std::abs(at(r, c) - at(c, r)) > tolerance) {
        fail("label_distances is not symmetric: " + where(r, c) + " = " + str(at(r, c)) + " but " + where(c, r) +
             " = " + str(at(c, r)));
      }
      at(r, c) = at(c, r) = 0.5 * (at(r, c) + at(c, r));
    }
  }
}

}  // namespace flashsinkhorn::detail
