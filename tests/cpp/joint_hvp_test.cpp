// solver::hvp_xy — H·(A, B) = (H_xx A + H_xy B, H_yx A + H_yy B) — against math facts, float64 on the
// CPU:
//   central differences of the exact gradients (gradient_x, gradient_y at tight convergence) along
//   (A, B), and the dense joint Hessian column by column (its cross blocks included);
//   B = 0 gives hvp_x(A) on x, A = 0 gives hvp_y(B) on y (and the other output the cross block);
//   symmetry ⟨(A', B'), H·(A, B)⟩ = ⟨(A, B), H·(A', B')⟩; full = fixed-potential + implicit, the
//   implicit part PSD on the joint space;
//   the fused key-direction pass against the generic one; the errors.
#include <gtest/gtest.h>

#include "hvp_support.hpp"

namespace fs = flashsinkhorn;
using namespace testing_support;

namespace {

// (n + m)·d ≤ 90 keeps the dense joint Hessian (2·(n + m)·d tight solves) to a second or two.
const hvp_case kCases[] = {
    {"12x9 d=3", 12, 9, 3, 1.0, 0.4},
    {"1x5 d=2", 1, 5, 2, 1.0, 0.3},
    {"20x17 d=2 s=0.5 eps=0.15", 20, 17, 2, 0.5, 0.15},
    {"7x3 d=4", 7, 3, 4, 1.0, 0.5},
};

hvp_problem make_case(const hvp_case& c) { return testing_support::make_case(c, 13, 31); }

// (∇_X F, ∇_Y F) concatenated, (n·d + m·d,).
std::vector<double> joint_gradient(const reference::cloud& x, const reference::cloud& y, const hvp_problem& p) {
  fs::solver s(make_problem(x, y, p.eps, p.cost_scale), tight_fp64());
  s.solve();
  std::vector<double> g(static_cast<std::size_t>((x.count + y.count) * x.dim));
  s.gradient_x(fs::host_matrix(g.data(), x.count, x.dim));
  s.gradient_y(fs::host_matrix(g.data() + x.count * x.dim, y.count, y.dim));
  return g;
}

// The derivative of the joint gradient along (A, B) = direction (concatenated) by the fourth-order
// central stencil (8[g(h) − g(−h)] − [g(2h) − g(−2h)])/(12h), the step h = 1e-3/max|direction| (a
// point moves by at most 2e-3): truncation O(h⁴)·|∇⁶F| ≈ 1e-12 relative, solve noise ≈ 1e-13
// (marginal error ≤ 1e-13, fp64) / h ≈ 1e-10 (measured: ≤ 3e-10) — so the 1e-8 bounds below leave
// more than an order for the problem's constants.
std::vector<double> finite_difference(const hvp_problem& p, const std::vector<double>& direction) {
  const double h = 1e-3 / max_abs(direction);
  const auto moved = [&](double t) {
    reference::cloud x = p.x, y = p.y;
    const std::size_t nx = p.x.points.size();
    for (std::size_t k = 0; k < nx; ++k) x.points[k] += t * direction[k];
    for (std::size_t k = 0; k < p.y.points.size(); ++k) y.points[k] += t * direction[nx + k];
    return joint_gradient(x, y, p);
  };
  const std::vector<double> up = moved(h), down = moved(-h), up2 = moved(2 * h), down2 = moved(-2 * h);
  std::vector<double> out(up.size());
  for (std::size_t k = 0; k < out.size(); ++k) out[k] = (8 * (up[k] - down[k]) - (up2[k] - down2[k])) / (12 * h);
  return out;
}

// H·(A, B) through hvp_xy, concatenated; direction = (A, B) concatenated.
std::vector<double> joint_product(const fs::solver& s, const hvp_problem& p, const std::vector<double>& direction,
                                  const fs::hvp_options& o, fs::hvp_report* report = nullptr) {
  const std::int64_t n = p.x.count, m = p.y.count, d = p.x.dim;
  std::vector<double> out(direction.size());
  const fs::hvp_report r =
      s.hvp_xy(fs::host_matrix(direction.data(), n, d), fs::host_matrix(direction.data() + n * d, m, d),
               fs::host_matrix(out.data(), n, d), fs::host_matrix(out.data() + n * d, m, d), o);
  if (report != nullptr) *report = r;
  return out;
}

std::vector<double> head(const std::vector<double>& v, std::size_t count) { return {v.begin(), v.begin() + count}; }
std::vector<double> tail(const std::vector<double>& v, std::size_t from) { return {v.begin() + from, v.end()}; }

class JointHvpVsFiniteDifferences : public ::testing::TestWithParam<int> {};

TEST_P(JointHvpVsFiniteDifferences, RandomDirectionsAndEveryColumn) {
  const hvp_case& c = kCases[GetParam()];
  const hvp_problem p = make_case(c);
  fs::solver s(make_problem(p.x, p.y, p.eps, p.cost_scale), tight_fp64());
  ASSERT_TRUE(s.solve().converged) << c.name;
  const std::int64_t size = (c.n + c.m) * c.d;
  for (std::uint64_t seed = 1; seed <= 3; ++seed) {
    const std::vector<double> direction = random_direction(size, seed);
    fs::hvp_report report;
    const std::vector<double> product = joint_product(s, p, direction, tight_hvp(), &report);
    const double error = relative_max_error(product, finite_difference(p, direction));
    std::cout << c.name << " seed " << seed << ": max|H(A,B) − FD|/max|FD| = " << error << "\n";
    EXPECT_LT(error, 1e-8) << c.name << " seed " << seed;
    EXPECT_TRUE(report.converged) << c.name << " residual " << report.relative_residual;
    EXPECT_LT(std::abs(report.gauge_defect), 1e-12) << c.name;
  }
  // The dense joint Hessian: every column, the cross blocks H_xy, H_yx included.
  double worst = 0;
  std::vector<double> e(static_cast<std::size_t>(size), 0.0);
  for (std::int64_t k = 0; k < size; ++k) {
    e[k] = 1;
    worst = std::max(worst, relative_max_error(joint_product(s, p, e, tight_hvp()), finite_difference(p, e)));
    e[k] = 0;
  }
  std::cout << c.name << ": worst column max|H e_k − FD|/max|FD| = " << worst << "\n";
  EXPECT_LT(worst, 1e-8) << c.name;
}

INSTANTIATE_TEST_SUITE_P(Cases, JointHvpVsFiniteDifferences, ::testing::Range(0, 4));

class JointHvpStructure : public ::testing::TestWithParam<int> {};

// With B = 0 the passes and the solve are those of hvp_x (hvp_y for A = 0): agreement to roundoff
// of one CG run against another on the same right-hand side (1e-12 of max|H·A|). Given as an
// empty view or as explicit zeros.
TEST_P(JointHvpStructure, OneDirectionIsTheSingleCloudProduct) {
  const hvp_case& c = kCases[GetParam()];
  const hvp_problem p = make_case(c);
  fs::solver s(make_problem(p.x, p.y, p.eps, p.cost_scale), tight_fp64());
  s.solve();
  const std::int64_t n = c.n, m = c.m, d = c.d;
  const std::vector<double> a = random_direction(n * d, 7), b = random_direction(m * d, 8);
  const std::vector<double> zeros_x(a.size(), 0.0), zeros_y(b.size(), 0.0);
  for (fs::hvp_part part : {fs::hvp_part::full, fs::hvp_part::fixed_potential, fs::hvp_part::implicit}) {
    const std::vector<double> ha = library_hvp(s, p.x, true, a, tight_hvp(part));
    const std::vector<double> hb = library_hvp(s, p.y, false, b, tight_hvp(part));
    std::vector<double> out_x(a.size()), out_y(b.size());
    s.hvp_xy(fs::host_matrix(a.data(), n, d), {}, fs::host_matrix(out_x.data(), n, d), {}, tight_hvp(part));
    EXPECT_LT(relative_max_error(out_x, ha), 1e-12) << c.name << " B empty";
    s.hvp_xy(fs::host_matrix(a.data(), n, d), fs::host_matrix(zeros_y.data(), m, d),
             fs::host_matrix(out_x.data(), n, d), fs::host_matrix(out_y.data(), m, d), tight_hvp(part));
    EXPECT_LT(relative_max_error(out_x, ha), 1e-12) << c.name << " B = 0";
    s.hvp_xy({}, fs::host_matrix(b.data(), m, d), {}, fs::host_matrix(out_y.data(), m, d), tight_hvp(part));
    EXPECT_LT(relative_max_error(out_y, hb), 1e-12) << c.name << " A empty";
    s.hvp_xy(fs::host_matrix(zeros_x.data(), n, d), fs::host_matrix(b.data(), m, d),
             fs::host_matrix(out_x.data(), n, d), fs::host_matrix(out_y.data(), m, d), tight_hvp(part));
    EXPECT_LT(relative_max_error(out_y, hb), 1e-12) << c.name << " A = 0";
  }
}

// Each output alone (the other view empty) is that half of the product with both: the passes a
// missing output drops are not needed by the other. Same CG right-hand side: 1e-12.
TEST_P(JointHvpStructure, EachOutputAlone) {
  const hvp_case& c = kCases[GetParam()];
  const hvp_problem p = make_case(c);
  fs::solver s(make_problem(p.x, p.y, p.eps, p.cost_scale), tight_fp64());
  s.solve();
  const std::int64_t n = c.n, m = c.m, d = c.d;
  const std::vector<double> u = random_direction((n + m) * d, 12);
  const auto nd = static_cast<std::size_t>(n * d);
  const fs::matrix_view a = fs::host_matrix(u.data(), n, d), b = fs::host_matrix(u.data() + nd, m, d);
  for (fs::hvp_part part : {fs::hvp_part::full, fs::hvp_part::fixed_potential, fs::hvp_part::implicit}) {
    const std::vector<double> both = joint_product(s, p, u, tight_hvp(part));
    std::vector<double> out_x(nd), out_y(u.size() - nd);
    s.hvp_xy(a, b, fs::host_matrix(out_x.data(), n, d), {}, tight_hvp(part));
    EXPECT_LT(relative_max_error(out_x, head(both, nd)), 1e-12) << c.name;
    s.hvp_xy(a, b, {}, fs::host_matrix(out_y.data(), m, d), tight_hvp(part));
    EXPECT_LT(relative_max_error(out_y, tail(both, nd)), 1e-12) << c.name;
  }
}

// Linearity and symmetry: H·(A, B) = H·(A, 0) + H·(0, B) (one solve against two, 1e-11 of the
// product) and ⟨(A', B'), H·(A, B)⟩ = ⟨(A, B), H·(A', B')⟩ (the Hessian is symmetric; 1e-11 of
// ‖H·(A, B)‖·‖(A', B')‖ — CG at 1e-12, float64 sums of ≤ 100 terms); full = fixed + implicit;
// ⟨(A, B), H_imp·(A, B)⟩ ≥ 0.
TEST_P(JointHvpStructure, LinearSymmetricAndPartsAddUp) {
  const hvp_case& c = kCases[GetParam()];
  const hvp_problem p = make_case(c);
  fs::solver s(make_problem(p.x, p.y, p.eps, p.cost_scale), tight_fp64());
  s.solve();
  const std::int64_t size = (c.n + c.m) * c.d;
  const auto nd = static_cast<std::size_t>(c.n * c.d);
  for (std::uint64_t seed = 1; seed <= 3; ++seed) {
    const std::vector<double> u = random_direction(size, seed), v = random_direction(size, seed + 50);
    const std::vector<double> hu = joint_product(s, p, u, tight_hvp());
    const std::vector<double> hv = joint_product(s, p, v, tight_hvp());
    const double scale = std::sqrt(inner(hu, hu) * inner(v, v));
    EXPECT_NEAR(inner(v, hu), inner(u, hv), 1e-11 * scale) << c.name << " seed " << seed;

    std::vector<double> only_x = u, only_y = u;
    std::fill(only_x.begin() + static_cast<std::ptrdiff_t>(nd), only_x.end(), 0.0);
    std::fill(only_y.begin(), only_y.begin() + static_cast<std::ptrdiff_t>(nd), 0.0);
    const std::vector<double> hx = joint_product(s, p, only_x, tight_hvp()),
                              hy = joint_product(s, p, only_y, tight_hvp());
    std::vector<double> sum(hu.size());
    for (std::size_t i = 0; i < sum.size(); ++i) sum[i] = hx[i] + hy[i];
    EXPECT_LT(relative_max_error(sum, hu), 1e-11) << c.name << " seed " << seed;

    const std::vector<double> fixed = joint_product(s, p, u, tight_hvp(fs::hvp_part::fixed_potential));
    const std::vector<double> implicit = joint_product(s, p, u, tight_hvp(fs::hvp_part::implicit));
    for (std::size_t i = 0; i < sum.size(); ++i) sum[i] = fixed[i] + implicit[i];
    EXPECT_LT(relative_max_error(sum, hu), 1e-12) << c.name << " seed " << seed;
    EXPECT_GE(inner(u, implicit), -1e-12 * std::sqrt(inner(implicit, implicit) * inner(u, u))) << c.name;
    // The cross block is really there: H_yx·A ≠ 0.
    EXPECT_GT(max_abs(tail(hx, nd)), 1e-3 * max_abs(head(hx, nd))) << c.name;
  }
}

// The fused key-direction pass (a second dot tile against a z panel) and the generic one (d·k
// values z_j ⊗ V_j) are the same sum in another order: 1e-12, on sizes crossing the CPU tiles
// (64 keys per panel, 6-row register blocks, 48-row groups).
TEST_P(JointHvpStructure, FusedEqualsGeneric) {
  const hvp_case& c = kCases[GetParam()];
  const hvp_problem p = make_case(c);
  fs::solver s(make_problem(p.x, p.y, p.eps, p.cost_scale), tight_fp64());
  s.solve();
  const std::vector<double> u = random_direction((c.n + c.m) * c.d, 4);
  for (fs::hvp_part part : {fs::hvp_part::fixed_potential, fs::hvp_part::full}) {
    const std::vector<double> fused = joint_product(s, p, u, tight_hvp(part, fs::two_gemm_path::fused));
    const std::vector<double> generic = joint_product(s, p, u, tight_hvp(part, fs::two_gemm_path::plan_pass));
    EXPECT_LT(relative_max_error(fused, generic), 1e-12) << c.name;
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, JointHvpStructure, ::testing::Range(0, 4));

TEST(JointHvpTiles, FusedEqualsGenericPastTheTiles) {
  for (const auto& [n, m, d] : {std::tuple<int, int, int>{97, 65, 3}, {49, 130, 4}, {1, 1, 1}}) {
    const hvp_problem p{reference::random_cloud(n, d, 3, 1.0, 0.2), reference::random_cloud(m, d, 4, 1.0, -0.2), 0.5,
                        1.0};
    fs::solver s(make_problem(p.x, p.y, p.eps, p.cost_scale), tight_fp64());
    s.solve();
    const std::vector<double> u = random_direction((n + m) * d, 9);
    const std::vector<double> fused = joint_product(s, p, u, tight_hvp(fs::hvp_part::full, fs::two_gemm_path::fused));
    const std::vector<double> generic =
        joint_product(s, p, u, tight_hvp(fs::hvp_part::full, fs::two_gemm_path::plan_pass));
    EXPECT_LT(relative_max_error(fused, generic), 1e-12) << describe(n, m, d, 3);
  }
}

TEST(JointHvpErrors, BadArgumentsAndUnsupportedProblems) {
  const hvp_problem p = make_case(kCases[0]);
  const std::int64_t n = p.x.count, m = p.y.count, d = p.x.dim;
  std::vector<double> a(static_cast<std::size_t>(n * d), 1.0), b(static_cast<std::size_t>(m * d), 1.0);
  std::vector<double> out_x(a.size()), out_y(b.size());
  const fs::matrix_view av = fs::host_matrix(a.data(), n, d), bv = fs::host_matrix(b.data(), m, d);
  const fs::mutable_matrix_view ox = fs::host_matrix(out_x.data(), n, d), oy = fs::host_matrix(out_y.data(), m, d);
  fs::solver s(make_problem(p.x, p.y, p.eps, p.cost_scale), tight_fp64());
  EXPECT_THROW(s.hvp_xy(av, bv, ox, oy), fs::invalid_argument);  // before solve()
  s.solve();
  EXPECT_THROW(s.hvp_xy({}, {}, ox, oy), fs::invalid_argument);
  EXPECT_THROW(s.hvp_xy(av, bv, {}, {}), fs::invalid_argument);
  EXPECT_THROW(s.hvp_xy(fs::host_matrix(a.data(), n, d - 1), bv, ox, oy), fs::invalid_argument);
  EXPECT_THROW(s.hvp_xy(av, fs::host_matrix(b.data(), m - 1, d), ox, oy), fs::invalid_argument);
  EXPECT_THROW(s.hvp_xy(av, bv, fs::host_matrix(out_x.data(), n - 1, d), oy), fs::invalid_argument);
  b[3] = NAN;
  EXPECT_THROW(s.hvp_xy(av, bv, ox, oy), fs::invalid_argument);
  b[3] = 1;
  fs::options debiased = tight_fp64();
  debiased.debias = true;
  fs::solver divergence(make_problem(p.x, p.y, p.eps, p.cost_scale), debiased);
  divergence.solve();
  EXPECT_THROW(divergence.hvp_xy(av, bv, ox, oy), fs::unsupported);
}

}  // namespace
