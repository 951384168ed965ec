// The CUDA backend's device matrix store (cuda/device_matrix_store.hpp) against the host store
// (core/host_matrix_store.hpp) over the same backend, operation by operation, in every mode: the
// points as the passes' operands, rounding, row combinations (in place, with row scales, on column
// ranges), row dot products, columns, and the plan and quadratic passes (with and without key
// directions) reading and writing store matrices. The passes are the same kernels either way, so
// they agree to the last bits; the float64 element operations to summation order.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "core/backend.hpp"
#include "core/host_matrix_store.hpp"
#include "core/matrix_store.hpp"
#include "core/prepare.hpp"
#include "cuda/cuda_backend.hpp"
#include "flashsinkhorn/options.hpp"
#include "gpu/gpu_test_support.hpp"

namespace {

using flashsinkhorn::precision;
using namespace flashsinkhorn::detail;

double max_relative(const std::vector<double>& got, const std::vector<double>& want) {
  EXPECT_EQ(got.size(), want.size());
  double scale = 0, worst = 0;
  for (double w : want) scale = std::max(scale, std::abs(w));
  for (std::size_t i = 0; i < std::min(got.size(), want.size()); ++i) {
    const double diff = std::abs(got[i] - want[i]);
    worst = std::isnan(diff) ? INFINITY : std::max(worst, diff);
  }
  return worst / (scale > 0 ? scale : 1.0);
}

class matrix_store_gpu_test : public gpu_tests::needs_gpu<::testing::TestWithParam<precision>> {};

TEST_P(matrix_store_gpu_test, device_store_matches_the_host_store) {
  const precision mode = GetParam();
  constexpr std::int64_t n = 300, m = 517, d = 20;
  std::mt19937_64 rng(11);
  prepared_problem problem;
  problem.x = gpu_tests::random_cloud(n, d, true, rng, 0.0);
  problem.y = gpu_tests::random_cloud(m, d, true, rng, 0.4);
  centre_clouds(problem);
  const double eps = 0.1 * d + 0.05;
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<double> f(n), g(m), a(n * d), b(m * d), scale_n(n), scale_m(m);
  for (auto* v : {&f, &g}) for (double& e : *v) e = 0.3 * eps * normal(rng);
  for (auto* v : {&a, &b, &scale_n, &scale_m}) for (double& e : *v) e = normal(rng);

  auto gpu = make_cuda_backend(problem, mode, 0);
  gpu->write_potential(slot::f, f);
  gpu->write_potential(slot::g, g);
  matrix_store* device = gpu->matrices();
  ASSERT_NE(device, nullptr);
  host_matrix_store host(*gpu, problem, mode);
  const std::string name(flashsinkhorn::to_string(mode));

  // The same sequence on both stores; each step's result compared.
  enum : int { kPx, kPy, kA, kB, kWide, kOut, kQuad, kCol };
  auto check = [&](int id, double tolerance, const char* what) {
    EXPECT_LE(max_relative(device->read(id), host.read(id)), tolerance) << what << " (" << name << ")";
  };
  for (matrix_store* s : {device, static_cast<matrix_store*>(&host)}) {
    s->load_points(kPx, side::x);
    s->load_points(kPy, side::y);
    s->write(kA, a, n, d);
    s->round_to_operands(kA);
    s->write(kB, b, m, d);
    s->write(kCol, scale_m, m, 1);
    s->write(kWide, {}, m, 2 * d + 1);  // [q, B∘s, s]
    s->combine(kWide, 0, d, false, {{kPy}});
    s->combine(kWide, d, d, false, {{kB, 0, &scale_m, 2.0}});
    s->combine(kWide, 2 * d, 1, false, {{kCol}});
    s->combine(kWide, 0, d, true, {{kWide, d, nullptr, -0.5}, {kPy, 0, &scale_m, 1.0}});  // in place
  }
  EXPECT_EQ(device->read(kPx), host.read(kPx)) << "points";
  EXPECT_EQ(device->read(kA), host.read(kA)) << "rounding";
  check(kWide, 1e-15, "combine");
  EXPECT_LE(max_relative(device->row_dots(kPx, 0, kA, 0, d), host.row_dots(kPx, 0, kA, 0, d)), 1e-14) << "row dots";
  EXPECT_EQ(device->column(kWide, 2 * d), host.column(kWide, 2 * d)) << "column";
  EXPECT_EQ(device->rows(kWide), m);
  EXPECT_EQ(device->cols(kWide), 2 * d + 1);

  // Passes: one value column (the CG's pass), many, and the quadratic pass with and without z.
  for (matrix_store* s : {device, static_cast<matrix_store*>(&host)}) s->plan_rows(plan_pass_request(side::x, slot::g, eps, nullptr, 0), kCol, kOut);
  check(kOut, 1e-12, "plan pass, k = 1");
  for (matrix_store* s : {device, static_cast<matrix_store*>(&host)}) s->plan_rows(plan_pass_request(side::x, slot::g, eps, nullptr, 0), kWide, kOut);
  check(kOut, 1e-12, "plan pass, k = 2d + 1");
  plan_quadratic_request quadratic;
  quadratic.rows = side::x;
  quadratic.keys = side::y;
  quadratic.key_potential = slot::g;
  quadratic.eps = eps;
  for (matrix_store* s : {device, static_cast<matrix_store*>(&host)}) s->plan_quadratic_rows(quadratic, kA, kPy, -1, kQuad);
  check(kQuad, 1e-12, "quadratic pass");
  for (matrix_store* s : {device, static_cast<matrix_store*>(&host)}) s->plan_quadratic_rows(quadratic, kPx, kPy, kB, kQuad);
  check(kQuad, 1e-12, "quadratic pass with key directions");
  plan_rows_request columns = plan_pass_request(side::y, slot::f, eps, nullptr, 0);
  for (matrix_store* s : {device, static_cast<matrix_store*>(&host)}) s->plan_rows(columns, kPx, kOut);
  check(kOut, 1e-12, "y-rows plan pass");
}

INSTANTIATE_TEST_SUITE_P(modes, matrix_store_gpu_test,
                         ::testing::Values(precision::fp64, precision::fp32, precision::tf32, precision::bf16),
                         [](const ::testing::TestParamInfo<precision>& param) {
                           return std::string(flashsinkhorn::to_string(param.param));
                         });

}  // namespace
