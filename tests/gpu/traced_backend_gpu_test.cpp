// FLASHSINKHORN_TRACE=1 on the CUDA backend (core/traced_backend.hpp): an HVP's passes through the
// device matrix store are printed too (they were the trace's unexplained "host" time), and the
// product does not change. Skips without a GPU.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cpp/hvp_support.hpp"
#include "cpp/trace_capture.hpp"

namespace {

using namespace testing_support;

std::vector<double> gpu_hvp_of(const reference::cloud& x, const reference::cloud& y, const std::vector<double>& a) {
  fs::options o = tight_fp64();
  o.device = fs::device_kind::cuda;
  fs::solver s(make_problem(x, y, 0.5, 1.0), o);
  s.solve();
  return library_hvp(s, x, true, a, tight_hvp());
}

TEST(TracedBackendOnGpu, PrintsTheMatrixStoresPassesAndChangesNothing) {
  if (!fs::cuda_available()) GTEST_SKIP() << "no CUDA device";
  const reference::cloud x = reference::random_cloud(41, 5, 1), y = reference::random_cloud(37, 5, 2);
  const std::vector<double> a = random_direction(x.count * x.dim, 3);
  expect_traced_run_unchanged([&] { return gpu_hvp_of(x, y, a); },
                              {"flashsinkhorn trace: store plan_quadratic_rows ", "flashsinkhorn trace: store row_dots",
                               " (enqueue)  ", "flashsinkhorn trace: plan_rows y<-x k=1"},
                              3000);
}

}  // namespace
