#include "optim/vector_ops.hpp"

#include <cmath>
#include <cstddef>

namespace flashsinkhorn::optim::detail {

double dot(const_span x, const_span y) {
  double sum = 0;
  for (std::size_t i = 0; i < x.size(); ++i) sum += x[i] * y[i];
  return sum;
}

double norm2(const_span x) {
  double largest = 0;
  for (double xi : x) largest = std::fmax(largest, std::fabs(xi));
  if (largest == 0 || !std::isfinite(largest)) return largest;
  double sum = 0;
  for (double xi : x) sum += (xi / largest) * (xi / largest);
  return largest * std::sqrt(sum);
}

void axpy(double alpha, const_span x, mutable_span y) {
  for (std::size_t i = 0; i < x.size(); ++i) y[i] += alpha * x[i];
}

void scale(double alpha, mutable_span x) {
  for (double& xi : x) xi *= alpha;
}

void copy(const_span x, mutable_span y) {
  for (std::size_t i = 0; i < x.size(); ++i) y[i] = x[i];
}

void fill(double value, mutable_span x) {
  for (double& xi : x) xi = value;
}

void negxpby(const_span x, double beta, mutable_span y) {
  for (std::size_t i = 0; i < x.size(); ++i) y[i] = beta * y[i] - x[i];
}

void add_scaled(const_span x, double alpha, const_span d, mutable_span y) {
  for (std::size_t i = 0; i < x.size(); ++i) y[i] = x[i] + alpha * d[i];
}

bool all_finite(const_span x) {
  for (double xi : x) {
    if (!std::isfinite(xi)) return false;
  }
  return true;
}

double adam_update(const_span gradient, double beta1, double beta2, double step, double epsilon_hat, mutable_span m,
                   mutable_span v, mutable_span theta) {
  double squared_step = 0;
  for (std::size_t i = 0; i < gradient.size(); ++i) {
    const double g = gradient[i];
    m[i] = beta1 * m[i] + (1 - beta1) * g;
    v[i] = beta2 * v[i] + (1 - beta2) * g * g;
    const double delta = step * m[i] / (std::sqrt(v[i]) + epsilon_hat);
    theta[i] -= delta;
    squared_step += delta * delta;
  }
  return std::sqrt(squared_step);
}

}  // namespace flashsinkhorn::optim::detail
