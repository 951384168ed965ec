// backend::plan_quadratic_rows with key_directions z (the joint HVP's cross term):
//   weighted_i = Σ_j softmax_j(S_i·)·(u_i·z_j)·V_j
// the CPU backend's fused pass (a second dot tile against a z panel) against the generic pass
// (core/plan_quadratic_generic.hpp, values z_j ⊗ V_j) and a dense float64 evaluation written here,
// both orientations (x-rows keyed by g, y-rows keyed by f), sizes crossing the CPU tiles (64 keys
// per panel, 6-row register blocks, 48-row groups); and solved_plan's fallback to the generic pass
// on a backend that does not fuse key directions.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <random>
#include <vector>

#include "core/host_matrix_store.hpp"
#include "core/plan_quadratic_generic.hpp"
#include "core/prepare.hpp"
#include "core/solved_plan.hpp"
#include "cpp/backend_sinkhorn.hpp"
#include "cpp/test_problems.hpp"
#include "cpu/cpu_backend.hpp"
#include "flashsinkhorn/error.hpp"

namespace fd = flashsinkhorn::detail;
namespace fs = flashsinkhorn;
using namespace testing_support;

namespace {

std::vector<double> normal_values(std::int64_t count, std::mt19937_64& rng, double shift = 0) {
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<double> v(static_cast<std::size_t>(count));
  for (double& t : v) t = normal(rng) + shift;
  return v;
}

// Σ_j softmax_j((h_j − s‖p_i − q_j‖²)/ε + log w_j)·(u_i·z_j)·V_j, directly in float64.
std::vector<double> dense_quadratic(const fd::prepared_cloud& rows, const fd::prepared_cloud& keys,
                                    const std::vector<double>& h, double s, double eps, const std::vector<double>& u,
                                    const std::vector<double>& z, const std::vector<double>& v, std::int64_t k) {
  const std::int64_t d = rows.dim;
  std::vector<double> out(static_cast<std::size_t>(rows.count * k), 0.0);
  std::vector<double> score(static_cast<std::size_t>(keys.count));
  for (std::int64_t i = 0; i < rows.count; ++i) {
    double top = -INFINITY;
    for (std::int64_t j = 0; j < keys.count; ++j) {
      double c = 0;
      for (std::int64_t t = 0; t < d; ++t) c += std::pow(rows.points[i * d + t] - keys.points[j * d + t], 2);
      score[j] = (h[j] - s * c) / eps + keys.log_weights[j];
      top = std::max(top, score[j]);
    }
    double total = 0;
    for (std::int64_t j = 0; j < keys.count; ++j) total += std::exp(score[j] - top);
    for (std::int64_t j = 0; j < keys.count; ++j) {
      double uz = 0;
      for (std::int64_t t = 0; t < d; ++t) uz += u[i * d + t] * z[j * d + t];
      const double weight = std::exp(score[j] - top) / total * uz;
      for (std::int64_t l = 0; l < k; ++l) out[i * k + l] += weight * v[j * k + l];
    }
  }
  return out;
}

class KeyDirections : public ::testing::TestWithParam<std::tuple<int, int, int, int>> {};

// Fused vs generic: the same sum in another order, 1e-12 of max|·|. Dense: the backend's LSE runs
// on exp2 of scores scaled by log2 e and the dense one on exp, both float64 — 1e-11.
TEST_P(KeyDirections, FusedEqualsGenericAndDense) {
  const auto [n, m, d, k] = GetParam();
  std::mt19937_64 rng(static_cast<std::uint64_t>(n * 1000 + m));
  fd::prepared_problem problem;
  problem.x = random_prepared_cloud(n, d, 0.0, rng);
  problem.y = random_prepared_cloud(m, d, 0.4, rng);
  problem.cost_scale = 0.7;
  fd::centre_clouds(problem);
  const double eps = 0.6;
  auto compute = fd::make_cpu_backend(problem, fs::precision::fp64, 2);
  ASSERT_TRUE(compute->supports_key_directions());
  alternate_sinkhorn(*compute, eps, 50);
  for (const fd::side rows : {fd::side::x, fd::side::y}) {
    const fd::prepared_cloud& row_cloud = rows == fd::side::x ? problem.x : problem.y;
    const fd::prepared_cloud& key_cloud = rows == fd::side::x ? problem.y : problem.x;
    const std::vector<double> u = normal_values(row_cloud.count * d, rng);
    const std::vector<double> z = normal_values(key_cloud.count * d, rng);
    const std::vector<double> v = normal_values(key_cloud.count * k, rng);
    fd::plan_quadratic_request request;
    request.rows = rows;
    request.keys = fd::other(rows);
    request.key_potential = rows == fd::side::x ? fd::slot::g : fd::slot::f;
    request.eps = eps;
    request.directions = u.data();
    request.values = v.data();
    request.k = k;
    request.key_directions = z.data();
    const std::vector<double> fused = compute->plan_quadratic_rows(request).weighted;
    const std::vector<double> generic =
        fd::plan_quadratic_rows_by_plan_pass(*compute, request, key_cloud.key_role_points(), d, row_cloud.count)
            .weighted;
    const std::vector<double> dense = dense_quadratic(
        row_cloud, key_cloud, compute->read_potential(request.key_potential), problem.cost_scale, eps, u, z, v, k);
    const std::string where = describe(n, m, d, 0) + (rows == fd::side::x ? " x-rows" : " y-rows");
    EXPECT_LT(max_abs_diff(fused, generic), 1e-12 * max_abs(generic)) << where;
    EXPECT_LT(max_abs_diff(fused, dense), 1e-11 * max_abs(dense)) << where;
    // z = the keys' own points is today's pass without key_directions.
    request.key_directions = key_cloud.key_role_points().data();
    const std::vector<double> with_points = compute->plan_quadratic_rows(request).weighted;
    request.key_directions = nullptr;
    EXPECT_EQ(with_points, compute->plan_quadratic_rows(request).weighted) << where;
  }
}

INSTANTIATE_TEST_SUITE_P(Sizes, KeyDirections,
                         ::testing::Values(std::make_tuple(1, 1, 1, 1), std::make_tuple(97, 65, 3, 3),
                                           std::make_tuple(49, 130, 4, 2), std::make_tuple(7, 200, 2, 5),
                                           std::make_tuple(60, 60, 4, 4)));

// A backend without fused key directions (the default of backend::supports_key_directions): it
// must never be sent one, and solved_plan serves them through the generic pass.
class without_key_directions final : public fd::backend {
 public:
  explicit without_key_directions(fd::backend& inner) : inner_(inner) {}
  [[nodiscard]] std::string name() const override { return inner_.name(); }
  void softmin(const fd::softmin_step& step) override { inner_.softmin(step); }
  double take_error() override { return inner_.take_error(); }
  void write_potential(fd::slot s, const std::vector<double>& values) override { inner_.write_potential(s, values); }
  [[nodiscard]] std::vector<double> read_potential(fd::slot s) const override { return inner_.read_potential(s); }
  void copy_potential(fd::slot dst, fd::slot src) override { inner_.copy_potential(dst, src); }
  void swap_potentials(fd::slot a, fd::slot b) override { inner_.swap_potentials(a, b); }
  [[nodiscard]] fd::plan_rows_result plan_rows(const fd::plan_rows_request& request) const override {
    return inner_.plan_rows(request);
  }
  [[nodiscard]] fd::plan_rows_result plan_quadratic_rows(const fd::plan_quadratic_request& request) const override {
    if (request.key_directions != nullptr) throw fs::invalid_argument("key_directions sent to a backend without them");
    return inner_.plan_quadratic_rows(request);
  }
  void point_gradient(const fd::point_gradient_request& request) override { inner_.point_gradient(request); }
  void read_point_gradient(fd::side s, const fs::mutable_matrix_view& out) const override {
    inner_.read_point_gradient(s, out);
  }

 private:
  fd::backend& inner_;
};

TEST(KeyDirectionsFallback, SolvedPlanUsesTheGenericPass) {
  std::mt19937_64 rng(5);
  fd::prepared_problem problem;
  problem.x = random_prepared_cloud(31, 3, 0.0, rng);
  problem.y = random_prepared_cloud(70, 3, 0.3, rng);
  fd::centre_clouds(problem);
  const double eps = 0.5;
  auto cpu = fd::make_cpu_backend(problem, fs::precision::fp64, 1);
  alternate_sinkhorn(*cpu, eps, 100);
  without_key_directions plain(*cpu);
  ASSERT_FALSE(plain.supports_key_directions());
  const fd::solved_plan fused_plan(*cpu, problem, eps), plain_plan(plain, problem, eps);
  const std::vector<double> u_x = normal_values(31 * 3, rng), z_y = normal_values(70 * 3, rng);
  const std::vector<double> u_y = normal_values(70 * 3, rng), z_x = normal_values(31 * 3, rng);
  const std::vector<double> v_y = normal_values(70 * 2, rng), v_x = normal_values(31 * 2, rng);
  const fs::two_gemm_path fused = fs::two_gemm_path::fused;
  // The products on host stores over each backend: u, V, z in, the product out.
  enum : int { kU, kV, kZ, kOut, kScratch };
  const auto product = [&](const fd::solved_plan& plan, const fd::backend& compute, bool rows,
                           const std::vector<double>& u, const std::vector<double>& v, const std::vector<double>& z) {
    fd::host_matrix_store store(compute, problem, fs::precision::fp64);
    const std::int64_t n_rows = rows ? 31 : 70, n_keys = rows ? 70 : 31;
    store.write(kU, u, n_rows, 3);
    store.write(kV, v, n_keys, 2);
    store.write(kZ, z, n_keys, 3);
    if (rows)
      plan.quadratic_row_average(store, kU, kV, kZ, kOut, fused);
    else
      plan.quadratic_transpose(store, kU, kV, kZ, kOut, kScratch, fused);
    return store.read(kOut);
  };
  const std::vector<double> rows_want = product(fused_plan, *cpu, true, u_x, v_y, z_y);
  const std::vector<double> rows_got = product(plain_plan, plain, true, u_x, v_y, z_y);
  EXPECT_LT(max_abs_diff(rows_got, rows_want), 1e-12 * max_abs(rows_want));
  const std::vector<double> cols_want = product(fused_plan, *cpu, false, u_y, v_x, z_x);
  const std::vector<double> cols_got = product(plain_plan, plain, false, u_y, v_x, z_x);
  EXPECT_LT(max_abs_diff(cols_got, cols_want), 1e-12 * max_abs(cols_want));
}

}  // namespace
