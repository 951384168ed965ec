// The float64 dense oracle: the mathematics of SPEC §1 written the obvious way, with the full
// n×m cost matrix. Slow and memory-hungry on purpose; only for tests on small problems.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <random>
#include <vector>

namespace reference {

struct cloud {
  std::int64_t count = 0;
  std::int64_t dim = 0;
  std::vector<double> points;   // (count, dim)
  std::vector<double> weights;  // (count,), sum 1
  std::vector<std::int32_t> labels;  // (count,) for a label cost, else empty
};

inline double sq_dist(const cloud& p, std::int64_t i, const cloud& q, std::int64_t j) {
  double d2 = 0;
  for (std::int64_t k = 0; k < p.dim; ++k) {
    const double t = p.points[i * p.dim + k] - q.points[j * q.dim + k];
    d2 += t * t;
  }
  return d2;
}

// The label term of the OTDD cost: λy·W[l_i, l_j], with λx on the feature distance.
struct label_matrix {
  std::int64_t count = 0;          // L
  std::vector<double> distances;   // W (L, L) row-major
  double feature_weight = 1;       // λx
  double label_weight = 1;         // λy
};

// C_ij = s·‖x_i − y_j‖², or with labels C_ij = s·(λx‖x_i − y_j‖² + λy·W[l_i, l_j]) — W looked up
// entry by entry, the obvious way (the library embeds it instead). Converts from a plain s.
struct cost_model {
  double s = 1;
  const label_matrix* labels = nullptr;

  cost_model(double scale, const label_matrix* label_term = nullptr) : s(scale), labels(label_term) {}  // NOLINT

  double operator()(const cloud& p, std::int64_t i, const cloud& q, std::int64_t j) const {
    if (labels == nullptr) return s * sq_dist(p, i, q, j);
    const double w = labels->distances[static_cast<std::size_t>(p.labels[i] * labels->count + q.labels[j])];
    return s * (labels->feature_weight * sq_dist(p, i, q, j) + labels->label_weight * w);
  }
};

// T_i = −ε·log Σ_j w_j exp((h_j − C_ij)/ε); h empty means 0.
inline std::vector<double> softmin(const cloud& rows, const cloud& keys, const std::vector<double>& h, double eps, const cost_model& s) {
  std::vector<double> out(static_cast<std::size_t>(rows.count));
  std::vector<double> terms(static_cast<std::size_t>(keys.count));
  for (std::int64_t i = 0; i < rows.count; ++i) {
    double m = -std::numeric_limits<double>::infinity();
    for (std::int64_t j = 0; j < keys.count; ++j) {
      const double hj = h.empty() ? 0.0 : h[j];
      terms[j] = keys.weights[j] > 0 ? (hj - s(rows, i, keys, j)) / eps + std::log(keys.weights[j])
                                     : -std::numeric_limits<double>::infinity();
      m = std::max(m, terms[j]);
    }
    double sum = 0;
    for (double t : terms) sum += std::exp(t - m);
    out[i] = -eps * (m + std::log(sum));
  }
  return out;
}

inline double damping(double eps, std::optional<double> rho) { return rho ? 1 / (1 + eps / *rho) : 1.0; }

inline double phi(double f, double eps, std::optional<double> rho) {
  return rho ? (*rho + eps / 2) * (1 - std::exp(-f / *rho)) : f;
}

struct solution {
  std::vector<double> f, g, f_aa, g_bb;
  double value = 0;
};

inline double value_of(const cloud& x, const cloud& y, const solution& s, double eps, std::optional<double> rx,
                       std::optional<double> ry, bool debias) {
  double v = 0;
  for (std::int64_t i = 0; i < x.count; ++i) v += x.weights[i] * (phi(s.f[i], eps, rx) - (debias ? phi(s.f_aa[i], eps, rx) : 0));
  for (std::int64_t j = 0; j < y.count; ++j) v += y.weights[j] * (phi(s.g[j], eps, ry) - (debias ? phi(s.g_bb[j], eps, ry) : 0));
  return v;
}

// POT/OTT-style alternating updates from f = g = 0; debiasing potentials by averaged updates.
inline solution alternating(const cloud& x, const cloud& y, double eps, const cost_model& s, int iterations,
                            std::optional<double> rho_x = {}, std::optional<double> rho_y = {}, bool debias = false) {
  solution out;
  out.g.assign(static_cast<std::size_t>(y.count), 0.0);
  out.f.assign(static_cast<std::size_t>(x.count), 0.0);
  if (debias) {
    out.f_aa = softmin(x, x, {}, eps, s);
    out.g_bb = softmin(y, y, {}, eps, s);
    for (double& v : out.f_aa) v *= damping(eps, rho_x);
    for (double& v : out.g_bb) v *= damping(eps, rho_y);
  }
  for (int it = 0; it < iterations; ++it) {
    out.f = softmin(x, y, out.g, eps, s);
    for (double& v : out.f) v *= damping(eps, rho_x);
    out.g = softmin(y, x, out.f, eps, s);
    for (double& v : out.g) v *= damping(eps, rho_y);
    if (debias) {
      auto fa = softmin(x, x, out.f_aa, eps, s);
      auto gb = softmin(y, y, out.g_bb, eps, s);
      for (std::size_t i = 0; i < fa.size(); ++i) out.f_aa[i] = 0.5 * (out.f_aa[i] + damping(eps, rho_x) * fa[i]);
      for (std::size_t j = 0; j < gb.size(); ++j) out.g_bb[j] = 0.5 * (out.g_bb[j] + damping(eps, rho_y) * gb[j]);
    }
  }
  out.value = value_of(x, y, out, eps, rho_x, rho_y, debias);
  return out;
}

// GeomLoss's sinkhorn_loop over an ε list, with its final extrapolation.
inline solution symmetric(const cloud& x, const cloud& y, const std::vector<double>& eps_list, const cost_model& s,
                          std::optional<double> rho = {}, bool debias = false) {
  solution out;
  auto scaled = [](std::vector<double> v, double k) { for (double& e : v) e *= k; return v; };
  auto average = [](const std::vector<double>& a, const std::vector<double>& b) {
    std::vector<double> r(a.size());
    for (std::size_t i = 0; i < a.size(); ++i) r[i] = 0.5 * (a[i] + b[i]);
    return r;
  };
  double eps = eps_list.front();
  double k = damping(eps, rho);
  out.g = scaled(softmin(y, x, {}, eps, s), k);
  out.f = scaled(softmin(x, y, {}, eps, s), k);
  if (debias) {
    out.f_aa = scaled(softmin(x, x, {}, eps, s), k);
    out.g_bb = scaled(softmin(y, y, {}, eps, s), k);
  }
  for (double e : eps_list) {
    eps = e;
    k = damping(eps, rho);
    auto ft = scaled(softmin(x, y, out.g, eps, s), k);
    auto gt = scaled(softmin(y, x, out.f, eps, s), k);
    out.f = average(out.f, ft);
    out.g = average(out.g, gt);
    if (debias) {
      auto fa = scaled(softmin(x, x, out.f_aa, eps, s), k);
      auto gb = scaled(softmin(y, y, out.g_bb, eps, s), k);
      out.f_aa = average(out.f_aa, fa);
      out.g_bb = average(out.g_bb, gb);
    }
  }
  auto f_new = scaled(softmin(x, y, out.g, eps, s), k);
  auto g_new = scaled(softmin(y, x, out.f, eps, s), k);
  out.f = f_new;
  out.g = g_new;
  if (debias) {
    auto fa = scaled(softmin(x, x, out.f_aa, eps, s), k);
    auto gb = scaled(softmin(y, y, out.g_bb, eps, s), k);
    out.f_aa = fa;
    out.g_bb = gb;
  }
  out.value = value_of(x, y, out, eps, rho, rho, debias);
  return out;
}

// The plan with rows renormalised from g (the library's convention after a solve, balanced rows):
// P_ij = a_i·softmax_j((g_j − C_ij)/ε + log b_j).  (n, m) row-major.
inline std::vector<double> row_plan(const cloud& x, const cloud& y, const std::vector<double>& g, double eps, const cost_model& s) {
  const std::vector<double> f = softmin(x, y, g, eps, s);
  std::vector<double> p(static_cast<std::size_t>(x.count * y.count));
  for (std::int64_t i = 0; i < x.count; ++i) {
    for (std::int64_t j = 0; j < y.count; ++j) {
      p[i * y.count + j] = x.weights[i] * y.weights[j] * std::exp((f[i] + g[j] - s(x, i, y, j)) / eps);
    }
  }
  return p;
}

// The plan of the potentials as they are: P_ij = a_i b_j exp((f_i + g_j − C_ij)/ε). With f = T_f(g)
// it is row_plan; with a reach on X, f ≠ T_f(g) and the rows carry the masses of the unbalanced plan.
inline std::vector<double> potential_plan(const cloud& x, const cloud& y, const std::vector<double>& f,
                                          const std::vector<double>& g, double eps, double s) {
  std::vector<double> p(static_cast<std::size_t>(x.count * y.count));
  for (std::int64_t i = 0; i < x.count; ++i) {
    for (std::int64_t j = 0; j < y.count; ++j) {
      p[i * y.count + j] = x.weights[i] * y.weights[j] * std::exp((f[i] + g[j] - s * sq_dist(x, i, y, j)) / eps);
    }
  }
  return p;
}

// Generalised KL(P ‖ a⊗b) = Σ_ij P_ij log(P_ij/(a_i b_j)) − Σ_ij P_ij + Σ_i a_i Σ_j b_j, with
// 0·log 0 = 0. `a`, `b` need not sum to 1.
inline double generalised_kl(const std::vector<double>& plan, const std::vector<double>& a, const std::vector<double>& b) {
  double entropy = 0, plan_mass = 0, mass_a = 0, mass_b = 0;
  for (double w : a) mass_a += w;
  for (double w : b) mass_b += w;
  for (std::size_t i = 0; i < a.size(); ++i) {
    for (std::size_t j = 0; j < b.size(); ++j) {
      const double p = plan[i * b.size() + j];
      if (p == 0) continue;
      entropy += p * std::log(p / (a[i] * b[j]));
      plan_mass += p;
    }
  }
  return entropy - plan_mass + mass_a * mass_b;
}

// A random cloud: N(0, σ²I) points shifted by `offset`, weights U[0,1)+0.1 normalised (or uniform).
inline cloud random_cloud(std::int64_t count, std::int64_t dim, std::uint64_t seed, double sigma = 1.0,
                          double offset = 0.0, bool uniform = false) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, sigma);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  cloud c;
  c.count = count;
  c.dim = dim;
  c.points.resize(static_cast<std::size_t>(count * dim));
  for (double& v : c.points) v = normal(rng) + offset;
  c.weights.resize(static_cast<std::size_t>(count));
  double total = 0;
  for (double& w : c.weights) total += (w = uniform ? 1.0 : unit(rng) + 0.1);
  for (double& w : c.weights) w /= total;
  return c;
}

}  // namespace reference
