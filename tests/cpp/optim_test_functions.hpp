// Objectives with known minimisers for the optimiser tests: a strictly convex quadratic, the extended
// Rosenbrock function (Moré, Garbow & Hillstrom 1981, problem 21) and a function with a saddle.
#pragma once

#include <cmath>
#include <random>
#include <vector>

#include "flashsinkhorn/optimize.hpp"

namespace optim_testing {

// Adam with lr 0.05, a gradient tolerance of 1e-12 and `max_iterations` steps (the resume and stop tests).
inline flashsinkhorn::optim::adam_options adam_settings(int max_iterations) {
  flashsinkhorn::optim::adam_options options;
  options.learning_rate = 0.05;
  options.max_iterations = max_iterations;
  options.gradient_tolerance = 1e-12;
  return options;
}

// The hybrid on saddle() from (0.5, 1e-3): Adam lr 0.05 for at most 500 steps, λ_min checked every 5.
inline flashsinkhorn::optim::hybrid_options saddle_hybrid_options() {
  flashsinkhorn::optim::hybrid_options options;
  options.adam.learning_rate = 0.05;
  options.adam.max_iterations = 500;
  options.check_every = 5;
  return options;
}

using flashsinkhorn::optim::const_span;
using flashsinkhorn::optim::mutable_span;
using flashsinkhorn::optim::objective;

// Dense row-major symmetric matrix helpers.
struct dense_symmetric {
  int size = 0;
  std::vector<double> values;  // (size, size)

  [[nodiscard]] double operator()(int r, int c) const { return values[static_cast<std::size_t>(r * size + c)]; }
  void apply(const_span x, mutable_span y) const {
    for (int r = 0; r < size; ++r) {
      double sum = 0;
      for (int c = 0; c < size; ++c) sum += (*this)(r, c) * x[static_cast<std::size_t>(c)];
      y[static_cast<std::size_t>(r)] = sum;
    }
  }
};

// Symmetric with N(0, 1/size) entries: a Wigner matrix, spectrum ≈ [−2, 2], indefinite.
inline dense_symmetric random_symmetric(int size, std::uint64_t seed) {
  std::mt19937_64 generator(seed);
  std::normal_distribution<double> normal(0, 1 / std::sqrt(static_cast<double>(size)));
  dense_symmetric a{size, std::vector<double>(static_cast<std::size_t>(size * size))};
  for (int r = 0; r < size; ++r) {
    for (int c = 0; c <= r; ++c) {
      const double v = normal(generator);
      a.values[static_cast<std::size_t>(r * size + c)] = v;
      a.values[static_cast<std::size_t>(c * size + r)] = v;
    }
  }
  return a;
}

// BᵀB/size + shift·I: symmetric positive definite, λ_min ≥ shift.
inline dense_symmetric random_spd(int size, double shift, std::uint64_t seed) {
  const dense_symmetric b = random_symmetric(size, seed);
  dense_symmetric a{size, std::vector<double>(static_cast<std::size_t>(size * size))};
  for (int r = 0; r < size; ++r) {
    for (int c = 0; c < size; ++c) {
      double sum = r == c ? shift : 0;
      for (int k = 0; k < size; ++k) sum += b(k, r) * b(k, c);
      a.values[static_cast<std::size_t>(r * size + c)] = sum;
    }
  }
  return a;
}

// f(θ) = ½θᵀAθ − bᵀθ, ∇f = Aθ − b, ∇²f = A.
inline objective quadratic(const dense_symmetric& a, const std::vector<double>& b) {
  objective f;
  f.value = [a, b](const_span theta) {
    std::vector<double> at(theta.size());
    a.apply(theta, at);
    double value = 0;
    for (std::size_t i = 0; i < theta.size(); ++i) value += 0.5 * theta[i] * at[i] - b[i] * theta[i];
    return value;
  };
  f.gradient = [a, b](const_span theta, mutable_span gradient) {
    a.apply(theta, gradient);
    double value = 0;
    for (std::size_t i = 0; i < theta.size(); ++i) {
      value += 0.5 * theta[i] * gradient[i] - b[i] * theta[i];
      gradient[i] -= b[i];
    }
    return value;
  };
  f.hvp = [a](const_span, const_span v, mutable_span product) { a.apply(v, product); };
  return f;
}

// Extended Rosenbrock, p even: Σ_pairs 100(w − u²)² + (1 − u)², (u, w) = (θ_{2i}, θ_{2i+1}).
// Minimiser (1, …, 1), f = 0; standard start (−1.2, 1, −1.2, 1, …).
inline objective extended_rosenbrock() {
  objective f;
  f.value = [](const_span t) {
    double value = 0;
    for (std::size_t i = 0; i + 1 < t.size(); i += 2) {
      value += 100 * (t[i + 1] - t[i] * t[i]) * (t[i + 1] - t[i] * t[i]) + (1 - t[i]) * (1 - t[i]);
    }
    return value;
  };
  f.gradient = [](const_span t, mutable_span g) {
    double value = 0;
    for (std::size_t i = 0; i + 1 < t.size(); i += 2) {
      const double u = t[i], w = t[i + 1], bend = w - u * u;
      value += 100 * bend * bend + (1 - u) * (1 - u);
      g[i] = -400 * u * bend - 2 * (1 - u);
      g[i + 1] = 200 * bend;
    }
    return value;
  };
  // Per pair: [[1200u² − 400w + 2, −400u], [−400u, 200]].
  f.hvp = [](const_span t, const_span v, mutable_span hv) {
    for (std::size_t i = 0; i + 1 < t.size(); i += 2) {
      const double u = t[i], w = t[i + 1];
      hv[i] = (1200 * u * u - 400 * w + 2) * v[i] - 400 * u * v[i + 1];
      hv[i + 1] = -400 * u * v[i] + 200 * v[i + 1];
    }
  };
  return f;
}

inline std::vector<double> rosenbrock_start(int dimension) {
  std::vector<double> start(static_cast<std::size_t>(dimension));
  for (std::size_t i = 0; i < start.size(); ++i) start[i] = i % 2 == 0 ? -1.2 : 1.0;
  return start;
}

// f(x, y) = x² − y² + y⁴/4: a saddle at 0 (∇²f = diag(2, −2)), minima (0, ±√2) with f = −1.
// ∇²f = diag(2, 3y² − 2): positive definite exactly where |y| > √(2/3).
inline objective saddle() {
  objective f;
  f.value = [](const_span t) { return t[0] * t[0] - t[1] * t[1] + 0.25 * std::pow(t[1], 4); };
  f.gradient = [](const_span t, mutable_span g) {
    g[0] = 2 * t[0];
    g[1] = -2 * t[1] + std::pow(t[1], 3);
    return t[0] * t[0] - t[1] * t[1] + 0.25 * std::pow(t[1], 4);
  };
  f.hvp = [](const_span t, const_span v, mutable_span hv) {
    hv[0] = 2 * v[0];
    hv[1] = (3 * t[1] * t[1] - 2) * v[1];
  };
  return f;
}

inline double max_abs_difference(const std::vector<double>& x, double target) {
  double largest = 0;
  for (double xi : x) largest = std::fmax(largest, std::fabs(xi - target));
  return largest;
}

}  // namespace optim_testing
