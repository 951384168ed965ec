// The host matrix store (core/host_matrix_store.hpp) — the CPU backend's HVP store and the reference
// the device store is tested against (tests/gpu/matrix_store_gpu_test.cpp) — on small matrices
// with known results: row combinations on column ranges (in place, with row scales), row dot
// products, columns, views in and out (float32, row strides), the first non-finite entry, the
// points rounded as the backend's operands, and the plan pass against the backend's own.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "core/backend.hpp"
#include "core/host_matrix_store.hpp"
#include "core/operand_rounding.hpp"
#include "core/prepare.hpp"
#include "cpu/cpu_backend.hpp"
#include "flashsinkhorn/error.hpp"

namespace fd = flashsinkhorn::detail;
namespace fs = flashsinkhorn;

namespace {

fd::prepared_cloud small_cloud(std::int64_t count, std::int64_t dim, double offset) {
  fd::prepared_cloud c;
  c.count = count;
  c.dim = dim;
  for (std::int64_t i = 0; i < count * dim; ++i) c.points.push_back(offset + 0.1 * static_cast<double>(i % 7) - 0.013 * static_cast<double>(i));
  c.weights.assign(static_cast<std::size_t>(count), 1.0 / static_cast<double>(count));
  for (double w : c.weights) c.log_weights.push_back(std::log(w));
  return c;
}

struct store_fixture {
  fd::prepared_problem problem;
  std::unique_ptr<fd::backend> compute;
  explicit store_fixture(fs::precision mode) {
    problem.x = small_cloud(5, 3, 0.0);
    problem.y = small_cloud(4, 3, 0.3);
    compute = fd::make_cpu_backend(problem, mode, 1);
  }
};

TEST(HostMatrixStore, CombinesColumnRangesInPlaceWithRowScales) {
  store_fixture f(fs::precision::fp64);
  fd::host_matrix_store store(*f.compute, f.problem, fs::precision::fp64);
  store.write(0, {1, 2, 3, 4, 5, 6}, 2, 3);  // A = [[1, 2, 3], [4, 5, 6]]
  store.write(1, {}, 2, 4);                  // zeros
  EXPECT_EQ(store.read(1), std::vector<double>(8, 0.0));
  const std::vector<double> r{2, -1};
  // B[:, 1:3] = 0.5·diag(r)·A[:, 0:2] + A[:, 1:3]
  store.combine(1, 1, 2, false, {{0, 0, &r, 0.5}, {0, 1}});
  EXPECT_EQ(store.read(1), (std::vector<double>{0, 1 + 2, 2 + 3, 0, 0, -2 + 5, -2.5 + 6, 0}));
  // in place, accumulating: A[:, 0:3] += −diag(r)·A[:, 0:3]  →  A∘(1 − r)
  store.combine(0, 0, 3, true, {{0, 0, &r, -1.0}});
  EXPECT_EQ(store.read(0), (std::vector<double>{-1, -2, -3, 8, 10, 12}));
  EXPECT_EQ(store.row_dots(0, 1, 1, 1, 2), (std::vector<double>{-2 * 3 + -3 * 5, 10 * 3 + 12 * 3.5}));
  EXPECT_EQ(store.column(1, 2), (std::vector<double>{5, 3.5}));
  EXPECT_EQ(store.rows(1), 2);
  EXPECT_EQ(store.cols(1), 4);
  EXPECT_THROW((void)store.read(7), fs::error);
}

TEST(HostMatrixStore, ReadsAndWritesStridedFloat32Views) {
  store_fixture f(fs::precision::fp64);
  fd::host_matrix_store store(*f.compute, f.problem, fs::precision::fp64);
  const std::vector<float> padded{1.5f, 2.5f, -9.f, 3.5f, 4.5f, -9.f};  // 2 × 2, row stride 3
  const fs::matrix_view in{padded.data(), 2, 2, 3, fs::dtype::float32, fs::memory_space::host, 0};
  store.write_view(3, in, "direction");
  EXPECT_EQ(store.read(3), (std::vector<double>{1.5, 2.5, 3.5, 4.5}));
  EXPECT_EQ(store.first_nonfinite(3), -1);
  std::vector<double> out(6, 7.0);
  const fs::mutable_matrix_view view{out.data(), 2, 2, 3, fs::dtype::float64, fs::memory_space::host, 0};
  store.read_into(3, view, "out");
  EXPECT_EQ(out, (std::vector<double>{1.5, 2.5, 7.0, 3.5, 4.5, 7.0}));  // the padding untouched
  store.write(4, {0, 1, std::numeric_limits<double>::quiet_NaN(), 2}, 2, 2);
  EXPECT_EQ(store.first_nonfinite(4), 2);
}

TEST(HostMatrixStore, PointsAreTheBackendsOperandsAndPassesAreTheBackends) {
  for (const fs::precision mode : {fs::precision::fp64, fs::precision::tf32, fs::precision::bf16}) {
    store_fixture f(mode);
    fd::host_matrix_store store(*f.compute, f.problem, mode);
    store.load_points(0, fd::side::y);
    const std::vector<double> points = store.read(0);
    ASSERT_EQ(points.size(), f.problem.y.points.size());
    for (std::size_t e = 0; e < points.size(); ++e) EXPECT_EQ(points[e], fd::rounded_operand(f.problem.y.points[e], mode));
    store.write(1, {0.3, -0.1, 0.7, 1.1, 0.2, 0.4, -0.6, 0.9, 0.5, 0.0, 1.3, -0.2}, 4, 3);
    store.round_to_operands(1);
    EXPECT_EQ(store.read(1)[0], fd::rounded_operand(0.3, mode));

    // The plan pass on store matrices is the backend's pass on the same values.
    f.compute->write_potential(fd::slot::g, {0.1, -0.2, 0.05, 0.0});
    const fd::plan_rows_request request = fd::plan_pass_request(fd::side::x, fd::slot::g, 0.7, nullptr, 0);
    store.plan_rows(request, 1, 2);
    const std::vector<double> values = store.read(1);
    const fd::plan_rows_result direct =
        f.compute->plan_rows(fd::plan_pass_request(fd::side::x, fd::slot::g, 0.7, values.data(), 3));
    EXPECT_EQ(store.read(2), direct.weighted);
    EXPECT_EQ(store.rows(2), 5);
  }
}

}  // namespace
