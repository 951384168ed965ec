// Hessian-vector products in use: the chain rule to parameters (linear X̂ = Z·W and a nonlinear
// map with its curvature term) against central differences in W; fp32 against fp64 on the CPU;
// options and errors (unsupported problems, bad shapes, before solve()).
#include <gtest/gtest.h>

#include <span>

#include "hvp_support.hpp"

namespace fs = flashsinkhorn;
using namespace testing_support;

namespace {

constexpr std::int64_t kN = 20, kInner = 4, kDim = 3;

struct parameter_problem {
  std::vector<double> features = random_direction(kN * kInner, 41);  // Z (n, p_in)
  std::vector<double> weights = random_direction(kInner * kDim, 42);  // W (p_in, d)
  reference::cloud y = reference::random_cloud(15, kDim, 43, 1.0, 0.2);
  double eps = 0.5;
};

// g(W) = L + c·L∘L, L = Z·W (c = 0: the linear map).
struct quadratic_map {
  const parameter_problem& p;
  double c;

  [[nodiscard]] std::vector<double> linear(std::span<const double> w) const {
    std::vector<double> l(static_cast<std::size_t>(kN * kDim), 0.0);
    for (std::int64_t i = 0; i < kN; ++i)
      for (std::int64_t k = 0; k < kDim; ++k)
        for (std::int64_t t = 0; t < kInner; ++t) l[i * kDim + k] += p.features[i * kInner + t] * w[t * kDim + k];
    return l;
  }
  [[nodiscard]] reference::cloud points(std::span<const double> w) const {
    reference::cloud x = reference::random_cloud(kN, kDim, 44);  // weights
    x.points = linear(w);
    for (double& v : x.points) v += c * v * v;
    return x;
  }
  // Zᵀ·M, M (n, d) → (p_in, d).
  [[nodiscard]] std::vector<double> z_transpose(const std::vector<double>& m) const {
    std::vector<double> out(static_cast<std::size_t>(kInner * kDim), 0.0);
    for (std::int64_t i = 0; i < kN; ++i)
      for (std::int64_t t = 0; t < kInner; ++t)
        for (std::int64_t k = 0; k < kDim; ++k) out[t * kDim + k] += p.features[i * kInner + t] * m[i * kDim + k];
    return out;
  }
  [[nodiscard]] fs::point_map map() const {
    if (c == 0) return fs::linear_point_map(fs::host_matrix(p.features.data(), kN, kInner), kDim);
    const std::vector<double> l = linear(p.weights);
    fs::point_map m;
    m.parameter_count = kInner * kDim;
    m.point_count = kN;
    m.dim = kDim;
    const quadratic_map self = *this;
    m.jvp = [self, l](std::span<const double> v, std::span<double> jv) {  // (Z·V)∘(1 + 2cL)
      const std::vector<double> zv = self.linear(v);
      for (std::size_t e = 0; e < zv.size(); ++e) jv[e] = zv[e] * (1 + 2 * self.c * l[e]);
    };
    m.vjp = [self, l](std::span<const double> g, std::span<double> out) {  // Zᵀ(G∘(1 + 2cL))
      std::vector<double> scaled(g.begin(), g.end());
      for (std::size_t e = 0; e < scaled.size(); ++e) scaled[e] *= 1 + 2 * self.c * l[e];
      const std::vector<double> r = self.z_transpose(scaled);
      std::copy(r.begin(), r.end(), out.begin());
    };
    m.curvature = [self](std::span<const double> g, std::span<const double> v, std::span<double> out) {
      const std::vector<double> zv = self.linear(v);  // Σ G_k ∇²g_k v = Zᵀ(2c·G∘(Z·V))
      std::vector<double> scaled(zv.size());
      for (std::size_t e = 0; e < zv.size(); ++e) scaled[e] = 2 * self.c * g[e] * zv[e];
      const std::vector<double> r = self.z_transpose(scaled);
      std::copy(r.begin(), r.end(), out.begin());
    };
    return m;
  }
  [[nodiscard]] std::vector<double> gradient(const std::vector<double>& w) const {
    const reference::cloud x = points(w);
    fs::solver s(make_problem(x, p.y, p.eps, 1.0), tight_fp64());
    s.solve();
    const quadratic_map at_w{parameter_problem_at(w), c};
    std::vector<double> out(w.size());
    fs::parameter_gradient(s, fs::point_cloud::x, at_w.map(), out);
    return out;
  }
  [[nodiscard]] parameter_problem parameter_problem_at(const std::vector<double>& w) const {
    parameter_problem q = p;
    q.weights = w;
    return q;
  }
};

class ParameterChainRule : public ::testing::TestWithParam<double> {};

TEST_P(ParameterChainRule, GradientAndHvpMatchFiniteDifferencesInW) {
  const parameter_problem p;
  const quadratic_map g{p, GetParam()};
  const reference::cloud x = g.points(p.weights);
  fs::solver s(make_problem(x, p.y, p.eps, 1.0), tight_fp64());
  ASSERT_TRUE(s.solve().converged);
  const fs::point_map map = g.map();
  std::vector<double> grad(p.weights.size());
  fs::parameter_gradient(s, fs::point_cloud::x, map, grad);
  const double h = 1e-4;
  for (std::size_t e : {0UL, 5UL, 11UL}) {  // ∇_W against differences of the value
    std::vector<double> up = p.weights, down = p.weights;
    up[e] += h;
    down[e] -= h;
    const double hi = fs::solver(make_problem(g.points(up), p.y, p.eps, 1.0), tight_fp64()).solve().cost;
    const double lo = fs::solver(make_problem(g.points(down), p.y, p.eps, 1.0), tight_fp64()).solve().cost;
    EXPECT_NEAR(grad[e], (hi - lo) / (2 * h), 1e-7 * (1 + std::abs(grad[e]))) << "∇_W[" << e << "]";
  }
  const std::vector<double> v = random_direction(static_cast<std::int64_t>(p.weights.size()), 45);
  std::vector<double> hv(v.size());
  const fs::hvp_report report = fs::parameter_hvp(s, fs::point_cloud::x, map, v, hv, tight_hvp());
  EXPECT_TRUE(report.converged);
  std::vector<double> up = p.weights, down = p.weights;  // H_W·V against differences of ∇_W along V
  for (std::size_t e = 0; e < v.size(); ++e) {
    up[e] += h * v[e];
    down[e] -= h * v[e];
  }
  const std::vector<double> g_up = g.gradient(up), g_down = g.gradient(down);
  std::vector<double> fd(v.size());
  for (std::size_t e = 0; e < v.size(); ++e) fd[e] = (g_up[e] - g_down[e]) / (2 * h);
  EXPECT_LT(relative_max_error(hv, fd), 1e-6) << "c = " << g.c;
}

INSTANTIATE_TEST_SUITE_P(Maps, ParameterChainRule, ::testing::Values(0.0, 0.3));

// fp32 CPU (converged to 1e-6, CG to 1e-6) against fp64: the fp32 plan carries a relative error
// ~u·C/ε ≈ 6e-8·(4/0.4) ≈ 1e-6 per entry, the CG residual 1e-6 relative enters δ through the
// Schur complement's condition number (here ~1e2): ~1e-4 of max|H·A| (measured 5e-6).
TEST(HvpPrecision, Fp32CpuAgreesWithFp64) {
  const hvp_problem p{reference::random_cloud(23, 3, 7, 1.0, 0.3), reference::random_cloud(17, 3, 8, 1.0, -0.3), 0.4, 1.0};
  fs::solver exact(make_problem(p.x, p.y, p.eps, p.cost_scale), tight_fp64());
  exact.solve();
  fs::options single = fixed_iterations(20000, fs::precision::fp32);
  single.tolerance = 1e-6;
  fs::solver rounded(make_problem(p.x, p.y, p.eps, p.cost_scale), single);
  ASSERT_TRUE(rounded.solve().converged);
  fs::hvp_options loose = tight_hvp();
  loose.tolerance = 1e-6;
  for (bool on_x : {true, false}) {
    const reference::cloud& side = on_x ? p.x : p.y;
    const std::vector<double> a = random_direction(side.count * side.dim, 3);
    fs::hvp_report report;
    const std::vector<double> single_hvp = library_hvp(rounded, side, on_x, a, loose, &report);
    const std::vector<double> double_hvp = library_hvp(exact, side, on_x, a, tight_hvp());
    const double error = relative_max_error(single_hvp, double_hvp);
    std::cout << (on_x ? "X" : "Y") << ": fp32 vs fp64 relative error " << error << ", CG iterations "
              << report.cg_iterations << ", residual " << report.relative_residual << "\n";
    EXPECT_LT(error, 1e-4);
  }
}

TEST(HvpOptions, ReportAndPreconditioner) {
  const hvp_problem p{reference::random_cloud(23, 3, 7, 1.0, 0.3), reference::random_cloud(17, 3, 8, 1.0, -0.3), 0.4, 1.0};
  fs::solver s(make_problem(p.x, p.y, p.eps, p.cost_scale), tight_fp64());
  s.solve();
  const std::vector<double> a = random_direction(p.x.count * 3, 1);
  fs::hvp_report with, without, capped, fixed;
  fs::hvp_options o = tight_hvp();
  const std::vector<double> reference_hvp = library_hvp(s, p.x, true, a, o, &with);
  o.preconditioner = fs::cg_preconditioner::none;
  EXPECT_LT(relative_max_error(library_hvp(s, p.x, true, a, o, &without), reference_hvp), 1e-10);
  EXPECT_TRUE(with.converged && without.converged);
  EXPECT_LE(with.relative_residual, 1e-12);
  o.max_iterations = 2;
  library_hvp(s, p.x, true, a, o, &capped);
  EXPECT_EQ(capped.cg_iterations, 2);
  EXPECT_FALSE(capped.converged);
  library_hvp(s, p.x, true, a, tight_hvp(fs::hvp_part::fixed_potential), &fixed);
  EXPECT_EQ(fixed.cg_iterations, 0);
  EXPECT_TRUE(fixed.converged);
  EXPECT_LT(fixed.plan_passes, 6);
  o.tolerance = -1;
  EXPECT_THROW(library_hvp(s, p.x, true, a, o), fs::invalid_argument);
}

TEST(HvpErrors, UnsupportedProblemsAndBadArguments) {
  const hvp_problem p{reference::random_cloud(9, 2, 7), reference::random_cloud(8, 2, 8), 0.5, 1.0};
  std::vector<double> a(18, 1.0), out(18);
  const auto call = [&](const fs::solver& s) { s.hvp_x(fs::host_matrix(a.data(), 9, 2), fs::host_matrix(out.data(), 9, 2)); };
  const auto solved = [&](const std::function<void(fs::options&)>& change) {
    fs::options o = tight_fp64();
    change(o);
    fs::solver s(make_problem(p.x, p.y, p.eps, p.cost_scale), o);
    s.solve();
    return s;
  };
  EXPECT_THROW(call(solved([](fs::options& o) { o.debias = true; })), fs::unsupported);
  EXPECT_THROW(call(solved([](fs::options& o) { o.reach_x = 1.0; })), fs::unsupported);
  EXPECT_THROW(call(solved([](fs::options& o) { o.cost = fs::cost_kind::cosine; })), fs::unsupported);
  {
    fs::solver unsolved(make_problem(p.x, p.y, p.eps, p.cost_scale), tight_fp64());
    EXPECT_THROW(call(unsolved), fs::invalid_argument);
  }
  const fs::solver s = solved([](fs::options&) {});
  EXPECT_NO_THROW(call(s));
  EXPECT_THROW(s.hvp_x(fs::host_matrix(a.data(), 8, 2), fs::host_matrix(out.data(), 9, 2)), fs::invalid_argument);
  EXPECT_THROW(s.hvp_y(fs::host_matrix(a.data(), 9, 2), fs::host_matrix(out.data(), 9, 2)), fs::invalid_argument);
  a[3] = std::nan("");
  EXPECT_THROW(call(s), fs::invalid_argument);
  reference::cloud zero = p.x;
  zero.weights[0] = 0;
  fs::solver with_zero(make_problem(zero, p.y, p.eps, p.cost_scale), tight_fp64());
  with_zero.solve();
  a[3] = 1;
  EXPECT_THROW(call(with_zero), fs::unsupported);
}

}  // namespace

// The generic two-GEMM pass holds (m + n)·d² float64 values; past 4 GiB it refuses with a message
// instead of failing an allocation (m = n = 700, d = 800: 7.2 GiB). One Sinkhorn iteration suffices:
// the check comes before any product.
TEST(HvpErrors, GenericTwoGemmPassRefusesTooManyValues) {
  const std::int64_t n = 700, d = 800;
  const reference::cloud x = reference::random_cloud(n, d, 21), y = reference::random_cloud(n, d, 22);
  fs::options o = fixed_iterations(1, fs::precision::fp64);
  o.cpu_threads = 1;
  fs::solver s(make_problem(x, y, 400.0, 1.0), o);
  s.solve();
  std::vector<double> a(static_cast<std::size_t>(n * d), 1e-3), out(a.size());
  fs::hvp_options settings;
  settings.two_gemm = fs::two_gemm_path::plan_pass;
  settings.part = fs::hvp_part::fixed_potential;
  try {
    s.hvp_x(fs::host_matrix(a.data(), n, d), fs::host_matrix(out.data(), n, d), settings);
    ADD_FAILURE() << "expected flashsinkhorn::unsupported";
  } catch (const fs::unsupported& e) {
    EXPECT_NE(std::string(e.what()).find("use the fused pass"), std::string::npos) << e.what();
  }
}
