#include "core/prepare.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>

#include "core/label_embedding.hpp"
#include "core/validate.hpp"
#include "core/view_io.hpp"
#include "flashsinkhorn/error.hpp"

namespace flashsinkhorn::detail {
namespace {

std::vector<double> read_weights(const vector_view& view, std::int64_t count, const char* name, double& mass) {
  if (view.empty()) {
    mass = 1;
    return std::vector<double>(static_cast<std::size_t>(count), 1.0 / static_cast<double>(count));
  }
  std::vector<double> w = read_vector(view, name);
  validate_weights(w, name);
  mass = std::accumulate(w.begin(), w.end(), 0.0);
  return w;
}

// Divides each row by its norm; returns the norms. A zero row has no direction: error.
std::vector<double> normalise_rows(std::vector<double>& points, std::int64_t dim, const char* name) {
  const std::int64_t count = static_cast<std::int64_t>(points.size()) / dim;
  std::vector<double> norms(static_cast<std::size_t>(count));
  for (std::int64_t i = 0; i < count; ++i) {
    double sq = 0;
    for (std::int64_t k = 0; k < dim; ++k) sq += points[i * dim + k] * points[i * dim + k];
    const double norm = std::sqrt(sq);
    if (!(norm > 0)) {
      throw invalid_argument(std::string(name) + " row " + std::to_string(i) +
                             " is zero; the cosine cost is undefined for it");
    }
    norms[i] = norm;
    for (std::int64_t k = 0; k < dim; ++k) points[i * dim + k] /= norm;
  }
  return norms;
}

double joint_diameter(const std::vector<double>& x, const std::vector<double>& y, std::int64_t dim) {
  std::vector<double> lo(static_cast<std::size_t>(dim), std::numeric_limits<double>::infinity());
  std::vector<double> hi(static_cast<std::size_t>(dim), -std::numeric_limits<double>::infinity());
  for (const auto* cloud : {&x, &y}) {
    for (std::size_t k = 0; k < cloud->size(); ++k) {
      const std::size_t c = k % static_cast<std::size_t>(dim);
      lo[c] = std::min(lo[c], (*cloud)[k]);
      hi[c] = std::max(hi[c], (*cloud)[k]);
    }
  }
  double sq = 0;
  for (std::int64_t c = 0; c < dim; ++c) sq += (hi[c] - lo[c]) * (hi[c] - lo[c]);
  return std::sqrt(sq);
}

// The clouds with their label coordinates appended (label_embedding.hpp): C = s·λx·‖p − q‖²_η.
struct labelled_clouds {
  std::vector<double> x, y;         // (n, d + r), (m, d + r)
  std::int64_t dim = 0;             // d + r
  std::int64_t negative_dim = 0;    // of the r label coordinates
  double largest_label_term = 0;    // (λy/λx)·max W[l, l'] over the labels present in X or Y
};

std::vector<std::int32_t> read_labels(const label_view& view, std::int64_t label_count, const char* name) {
  std::vector<std::int32_t> labels(view.data, view.data + view.size);
  validate_labels(labels, label_count, name);
  return labels;
}

labelled_clouds label_clouds(const label_cost& cost, const std::vector<double>& x, const std::vector<double>& y,
                             std::int64_t dim) {
  const std::int64_t label_count = cost.label_distances.rows;
  std::vector<double> w = read_matrix(cost.label_distances, "label_distances");
  validate_label_distances(w, label_count);
  const std::vector<std::int32_t> x_labels = read_labels(cost.x_labels, label_count, "x_labels");
  const std::vector<std::int32_t> y_labels = read_labels(cost.y_labels, label_count, "y_labels");
  const label_embedding embedding = embed_label_distances(w, label_count);
  const double ratio = cost.label_weight / cost.feature_weight;  // λy/λx: λx is folded into s

  labelled_clouds out;
  out.x = append_label_coordinates(x, dim, x_labels, embedding, std::sqrt(ratio));
  out.y = append_label_coordinates(y, dim, y_labels, embedding, std::sqrt(ratio));
  out.dim = dim + embedding.dim;
  out.negative_dim = embedding.negative_dim;
  std::vector<char> present(static_cast<std::size_t>(label_count), 0);
  for (const auto* labels : {&x_labels, &y_labels}) {
    for (std::int32_t l : *labels) present[static_cast<std::size_t>(l)] = 1;
  }
  double largest = 0;
  for (std::int64_t l = 0; l < label_count; ++l) {
    for (std::int64_t k = 0; k < label_count; ++k) {
      if (present[l] && present[k]) largest = std::max(largest, w[l * label_count + k]);
    }
  }
  out.largest_label_term = ratio * largest;
  return out;
}

// normalise: divide the weights by their sum (options::normalize_weights); else keep the masses.
prepared_cloud make_cloud(std::vector<double> points, std::vector<double> weights, std::int64_t dim, bool normalise) {
  prepared_cloud cloud;
  cloud.count = static_cast<std::int64_t>(weights.size());
  cloud.dim = dim;
  cloud.points = std::move(points);
  const double total = std::accumulate(weights.begin(), weights.end(), 0.0);
  cloud.log_weights.resize(weights.size());
  for (std::size_t i = 0; i < weights.size(); ++i) {
    if (normalise) weights[i] /= total;
    cloud.log_weights[i] = weights[i] > 0 ? std::log(weights[i]) : -std::numeric_limits<double>::infinity();
  }
  cloud.weights = std::move(weights);
  return cloud;
}

}  // namespace

// Centre by the joint weighted mean μ = ½(Σ ã_i x_i + Σ b̃_j y_j) (ã, b̃: the weights over their
// sums): C is unchanged, and the norms entering the attention form ‖p‖² + ‖q‖² − 2p·q stay small,
// which bounds cancellation.
void centre_clouds(prepared_problem& problem) {
  const std::int64_t dim = problem.x.dim;
  std::vector<double> mean(static_cast<std::size_t>(dim), 0.0);
  for (const prepared_cloud* c : {&problem.x, &problem.y}) {
    const double mass = std::accumulate(c->weights.begin(), c->weights.end(), 0.0);
    for (std::int64_t i = 0; i < c->count; ++i) {
      for (std::int64_t k = 0; k < dim; ++k) mean[k] += 0.5 * c->weights[i] / mass * c->points[i * dim + k];
    }
  }
  for (prepared_cloud* c : {&problem.x, &problem.y}) {
    for (std::int64_t i = 0; i < c->count; ++i) {
      for (std::int64_t k = 0; k < dim; ++k) c->points[i * dim + k] -= mean[k];
    }
  }
}

void make_key_points(prepared_cloud& cloud) {
  cloud.key_points.clear();
  if (cloud.negative_dim == 0) return;
  cloud.key_points = cloud.points;
  for (std::int64_t i = 0; i < cloud.count; ++i) {
    for (std::int64_t k = cloud.dim - cloud.negative_dim; k < cloud.dim; ++k) cloud.key_points[i * cloud.dim + k] *= -1;
  }
}

prepared_inputs prepare(const problem& p, const options& o) {
  validate_arguments(p, o);
  prepared_inputs in;
  const std::int64_t dim = p.x.cols;
  in.x_input = read_matrix(p.x, "X");
  in.y_input = read_matrix(p.y, "Y");
  validate_points(in.x_input, dim, "X");
  validate_points(in.y_input, dim, "Y");
  std::vector<double> a = read_weights(p.a, p.x.rows, "a", in.mass_a);
  std::vector<double> b = read_weights(p.b, p.y.rows, "b", in.mass_b);
  const bool balanced = !o.reach_x && !o.reach_y;
  if (balanced && !o.normalize_weights && std::abs(in.mass_a - in.mass_b) > 1e-9 * std::max(in.mass_a, in.mass_b)) {
    throw invalid_argument("balanced OT needs equal masses, but sum(a) = " + std::to_string(in.mass_a) +
                           " and sum(b) = " + std::to_string(in.mass_b) +
                           "; normalise the weights or set a reach (unbalanced OT)");
  }
  if (!p.initial_f.empty()) {
    in.initial_f = read_vector(p.initial_f, "initial_f");
    in.initial_g = read_vector(p.initial_g, "initial_g");
    validate_potential(in.initial_f, "initial_f");
    validate_potential(in.initial_g, "initial_g");
  }

  std::vector<double> x = in.x_input;
  std::vector<double> y = in.y_input;
  double s = p.cost_scale;
  if (o.cost == cost_kind::cosine) {
    in.x_norms = normalise_rows(x, dim, "X");
    in.y_norms = normalise_rows(y, dim, "Y");
    s = 0.5;  // 1 − cos(x, y) = ½‖x̂ − ŷ‖²
  }
  in.dim = dim;
  in.diameter = o.diameter ? *o.diameter : joint_diameter(x, y, dim);

  std::int64_t kernel_dim = dim;
  std::int64_t negative_dim = 0;
  if (!p.labels.empty()) {
    labelled_clouds labelled = label_clouds(p.labels, x, y, dim);
    x = std::move(labelled.x);
    y = std::move(labelled.y);
    kernel_dim = labelled.dim;
    negative_dim = labelled.negative_dim;
    s *= p.labels.feature_weight;
    // ε-scaling starts at diameter²: with s' = s·λx, s'·diameter² ≥ every C_ij.
    if (!o.diameter) in.diameter = std::sqrt(in.diameter * in.diameter + labelled.largest_label_term);
  }

  in.kernel.x = make_cloud(std::move(x), std::move(a), kernel_dim, o.normalize_weights);
  in.kernel.y = make_cloud(std::move(y), std::move(b), kernel_dim, o.normalize_weights);
  in.kernel.x.negative_dim = in.kernel.y.negative_dim = negative_dim;
  in.kernel.cost_scale = s;

  centre_clouds(in.kernel);
  make_key_points(in.kernel.x);
  make_key_points(in.kernel.y);
  return in;
}

}  // namespace flashsinkhorn::detail
