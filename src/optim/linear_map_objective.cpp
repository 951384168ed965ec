// L(W) = ℓ(XW) and its derivatives by the chain rule; see
// include/flashsinkhorn/optim/linear_map_objective.hpp.
#include "flashsinkhorn/optim/linear_map_objective.hpp"

#include <memory>
#include <string>
#include <utility>

#include "flashsinkhorn/error.hpp"

namespace flashsinkhorn::optim {
namespace {

// The fixed design X (n × d_in, row-major) and the products the chain rule needs.
struct design_matrix {
  std::vector<double> x;
  std::size_t n, d_in, d_out;

  // Z = X W: (n × d_in)(d_in × d_out).
  void map(const_span w, mutable_span z) const {
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t c = 0; c < d_out; ++c) z[i * d_out + c] = 0;
      for (std::size_t k = 0; k < d_in; ++k) {
        const double xik = x[i * d_in + k];
        for (std::size_t c = 0; c < d_out; ++c) z[i * d_out + c] += xik * w[k * d_out + c];
      }
    }
  }

  // G_W = Xᵀ G_Z: (d_in × n)(n × d_out).
  void pull_back(const_span g_z, mutable_span g_w) const {
    for (std::size_t k = 0; k < d_in * d_out; ++k) g_w[k] = 0;
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t k = 0; k < d_in; ++k) {
        const double xik = x[i * d_in + k];
        for (std::size_t c = 0; c < d_out; ++c) g_w[k * d_out + c] += xik * g_z[i * d_out + c];
      }
    }
  }
};

}  // namespace

objective linear_map_objective(objective points_loss, std::vector<double> x, int n, int d_in, int d_out) {
  if (n < 1 || d_in < 1 || d_out < 1) {
    std::string message("linear_map_objective: n, d_in and d_out must be ≥ 1, got n = ");
    message.append(std::to_string(n)).append(", d_in = ").append(std::to_string(d_in));
    message.append(", d_out = ").append(std::to_string(d_out));
    throw invalid_argument(message);
  }
  if (x.size() != static_cast<std::size_t>(n) * static_cast<std::size_t>(d_in)) {
    std::string message("linear_map_objective: x has ");
    message.append(std::to_string(x.size())).append(" values; an n × d_in design needs ");
    message.append(std::to_string(static_cast<std::size_t>(n) * static_cast<std::size_t>(d_in)));
    throw invalid_argument(message);
  }
  if (!points_loss.gradient) {
    throw invalid_argument("linear_map_objective needs the gradient of the points loss; it is empty");
  }
  const auto design = std::make_shared<const design_matrix>(
      design_matrix{std::move(x), static_cast<std::size_t>(n), static_cast<std::size_t>(d_in),
                    static_cast<std::size_t>(d_out)});
  const auto loss = std::make_shared<const objective>(std::move(points_loss));
  const std::size_t points_size = design->n * design->d_out;

  objective mapped;
  if (loss->value) {
    mapped.value = [design, loss, points_size](const_span w) {
      std::vector<double> z(points_size);
      design->map(w, z);
      return loss->value(z);
    };
  }
  mapped.gradient = [design, loss, points_size](const_span w, mutable_span gradient) {
    std::vector<double> z(points_size), g_z(points_size);
    design->map(w, z);
    const double value = loss->gradient(z, g_z);
    design->pull_back(g_z, gradient);
    return value;
  };
  if (loss->hvp) {
    mapped.hvp = [design, loss, points_size](const_span w, const_span v, mutable_span product) {
      std::vector<double> z(points_size), xv(points_size), hxv(points_size);
      design->map(w, z);
      design->map(v, xv);
      loss->hvp(z, xv, hxv);
      design->pull_back(hxv, product);
    };
  }
  return mapped;
}

}  // namespace flashsinkhorn::optim
