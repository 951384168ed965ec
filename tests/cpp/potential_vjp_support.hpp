// Helpers for the potential_vjp tests: converged solves, losses of the potentials with their
// cotangents, and the gradients potential_vjp returns, as plain vectors.
#pragma once

#include <cmath>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "test_problems.hpp"

namespace testing_support {

namespace fs = flashsinkhorn;

// float64 on the CPU, run to the roundoff floor of the marginal error.
inline fs::options tight_fp64() {
  fs::options o = fixed_iterations(20000, fs::precision::fp64);
  o.tolerance = 1e-13;
  o.check_every = 5;
  return o;
}

// A loss of the potentials: its value and its cotangents (∂L/∂f, ∂L/∂g).
struct potential_loss {
  std::string name;
  std::function<double(const std::vector<double>& f, const std::vector<double>& g)> value;
  std::function<void(const std::vector<double>& f, const std::vector<double>& g, std::vector<double>& df,
                     std::vector<double>& dg)>
      cotangent;
};

inline double mean(const std::vector<double>& v) {
  return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

// ⟨u, f⟩ + ⟨v, g⟩ for random u, v; with `invariant`, v is shifted so that Σu = Σv.
inline potential_loss linear_loss(std::int64_t n, std::int64_t m, std::uint64_t seed, bool invariant) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  std::vector<double> u(static_cast<std::size_t>(n)), v(static_cast<std::size_t>(m));
  for (double& t : u) t = normal(rng);
  for (double& t : v) t = normal(rng);
  if (invariant) {
    const double shift = (mean(u) * static_cast<double>(n) - mean(v) * static_cast<double>(m)) / static_cast<double>(m);
    for (double& t : v) t += shift;
  }
  potential_loss loss;
  loss.name = invariant ? "linear" : "linear, not gauge invariant";
  loss.value = [u, v](const std::vector<double>& f, const std::vector<double>& g) {
    return std::inner_product(u.begin(), u.end(), f.begin(), 0.0) + std::inner_product(v.begin(), v.end(), g.begin(), 0.0);
  };
  loss.cotangent = [u, v](const std::vector<double>&, const std::vector<double>&, std::vector<double>& df,
                          std::vector<double>& dg) {
    df = u;
    dg = v;
  };
  return loss;
}

// ½‖f − f̄‖² + Σ_j sin(g_j − ḡ) + (f̄ + ḡ)²: gauge invariant (f̄ + ḡ is), and nonlinear in both.
inline potential_loss nonlinear_loss() {
  potential_loss loss;
  loss.name = "nonlinear";
  loss.value = [](const std::vector<double>& f, const std::vector<double>& g) {
    const double fm = mean(f), gm = mean(g);
    double v = 0;
    for (double t : f) v += 0.5 * (t - fm) * (t - fm);
    for (double t : g) v += std::sin(t - gm);
    return v + (fm + gm) * (fm + gm);
  };
  loss.cotangent = [](const std::vector<double>& f, const std::vector<double>& g, std::vector<double>& df,
                      std::vector<double>& dg) {
    const double fm = mean(f), gm = mean(g);
    const double n = static_cast<double>(f.size()), m = static_cast<double>(g.size());
    double cos_mean = 0;
    for (double t : g) cos_mean += std::cos(t - gm) / m;
    df.resize(f.size());
    dg.resize(g.size());
    for (std::size_t i = 0; i < f.size(); ++i) df[i] = f[i] - fm + 2 * (fm + gm) / n;
    for (std::size_t j = 0; j < g.size(); ++j) dg[j] = std::cos(g[j] - gm) - cos_mean + 2 * (fm + gm) / m;
  };
  return loss;
}

struct vjp_gradients {
  std::vector<double> x, y, a, b;
  fs::potential_vjp_report report;
};

inline vjp_gradients potential_gradients(const fs::solver& solver, const std::vector<double>& df,
                                         const std::vector<double>& dg, std::int64_t d,
                                         const fs::potential_vjp_options& settings) {
  const auto n = static_cast<std::int64_t>(df.size()), m = static_cast<std::int64_t>(dg.size());
  vjp_gradients out;
  out.x.resize(static_cast<std::size_t>(n * d));
  out.y.resize(static_cast<std::size_t>(m * d));
  out.a.resize(static_cast<std::size_t>(n));
  out.b.resize(static_cast<std::size_t>(m));
  fs::potential_vjp_outputs where;
  where.grad_x = fs::host_matrix(out.x.data(), n, d);
  where.grad_y = fs::host_matrix(out.y.data(), m, d);
  where.grad_a = fs::host_vector(out.a.data(), n);
  where.grad_b = fs::host_vector(out.b.data(), m);
  out.report = solver.potential_vjp(fs::host_vector(df.data(), n), fs::host_vector(dg.data(), m), where, settings);
  return out;
}

}  // namespace testing_support
