// Predicted row references (softmin_narrow_kernel.cuh, softmin_wgmma_ws_kernel.cuh): a half-step whose
// rows' previous potentials predict their LSE well, off by far more than the guard's window for every
// row (each CTA's first pass overflows or underflows and it folds its keys again online), or well
// for all rows but every 97th (those rows' CTAs fold again) gives the CPU backend's float64 half-step
// within the mode's one-step tolerance, and the previous potentials enter only as references:
// the result must not depend on them. The kernels take the references FLASHSINKHORN_NARROW_REFERENCE
// selects for the process; tools/gpu_check.sh runs this file under `predicted` (every kernel that can
// predict does) as well as the default. Skips without a GPU.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/backend.hpp"
#include "core/prepare.hpp"
#include "cpu/cpu_backend.hpp"
#include "cuda/cuda_backend.hpp"
#include "gpu/gpu_test_support.hpp"

namespace {

using flashsinkhorn::precision;
using namespace flashsinkhorn::detail;

struct reference_case {
  std::int64_t rows, keys, dim;
};

class predicted_reference_test : public ::testing::TestWithParam<reference_case> {};

// How the previous potentials predict: exactly (the half-step's own result), far too high, far too
// low (LSE predictions off by ±10⁴ nats: the first pass's sums leave [2⁻⁶⁰, 3·10³⁸] whatever the
// margin), or exactly but for every 97th row far too high.
enum class prediction { exact, too_high, too_low, one_row_in_97_off };

std::string name_of(prediction p) {
  switch (p) {
    case prediction::exact: return "exact";
    case prediction::too_high: return "too high";
    case prediction::too_low: return "too low";
    case prediction::one_row_in_97_off: return "one row in 97 off";
  }
  return "?";
}

TEST_P(predicted_reference_test, half_step_is_the_float64_one_whatever_the_prediction) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  const reference_case c = GetParam();
  std::mt19937_64 rng(7919ull * c.rows + c.keys + c.dim);
  prepared_problem problem;
  problem.x = gpu_tests::random_cloud(c.rows, c.dim, true, rng, 0.0);
  problem.y = gpu_tests::random_cloud(c.keys, c.dim, true, rng, 0.3);
  centre_clouds(problem);
  const double scale = gpu_tests::largest_cost(problem);
  const double eps = 0.1 * static_cast<double>(c.dim) + 0.05;  // C/ε = O(10), as in cuda_backend_test
  std::vector<double> key_potential(static_cast<std::size_t>(c.keys));
  std::normal_distribution<double> normal(0.0, eps);
  for (double& h : key_potential) h = normal(rng);

  // f = softmin over the keys with h (float64 on the CPU), then the same half-step with f as the
  // previous potential of its rows, in every mode.
  const softmin_step step{side::x, side::y, slot::g, slot::f, slot::f_next, eps, 1, 1, false};
  auto exact = make_cpu_backend(problem, precision::fp64, 0);
  exact->write_potential(slot::g, key_potential);
  exact->softmin({side::x, side::y, slot::g, std::nullopt, slot::f, eps, 1, 1, false});
  const std::vector<double> expected = exact->read_potential(slot::f);

  for (precision mode : {precision::fp32, precision::tf32, precision::bf16}) {
    const double tol = 2 * gpu_tests::step_tolerance_vs_reference(mode, scale);  // the step and its key potentials
    for (prediction how : {prediction::exact, prediction::too_high, prediction::too_low, prediction::one_row_in_97_off}) {
      std::string trace(flashsinkhorn::to_string(mode));
      trace += ", prediction ";
      trace += name_of(how);
      SCOPED_TRACE(trace);
      std::vector<double> previous = expected;
      for (std::size_t i = 0; i < previous.size(); ++i) {
        // f_prev far below the truth predicts an LSE far above it (lse = (s‖p‖² − f_prev)/ε).
        if (how == prediction::too_high || (how == prediction::one_row_in_97_off && i % 97 == 5))
          previous[i] -= 1e4 * eps;
        if (how == prediction::too_low) previous[i] += 1e4 * eps;
      }
      auto gpu = make_cuda_backend(problem, mode, 0);
      gpu->write_potential(slot::g, key_potential);
      gpu->write_potential(slot::f, previous);
      gpu->softmin(step);
      EXPECT_LE(gpu_tests::max_abs_diff(gpu->read_potential(slot::f_next), expected), tol);
    }
  }
}

// fp32: the narrow kernel (d ≤ 16); tf32: the warp-specialised wgmma kernel (d = 3 included since
// session 35), the narrow one at d = 2 where it predicts; bf16: the copy-engine wgmma kernel, which
// keeps its online maximum. Key ranges: one split and several (FlashDecoding splits of
// a few rows against many keys), with partial last tiles and row blocks.
INSTANTIATE_TEST_SUITE_P(sizes, predicted_reference_test,
                         ::testing::Values(reference_case{3000, 5000, 8}, reference_case{700, 20011, 8},
                                           reference_case{1025, 3001, 3}, reference_case{513, 9000, 16},
                                           reference_case{900, 4000, 2}),
                         [](const ::testing::TestParamInfo<reference_case>& param_info) {
                           const reference_case& c = param_info.param;
                           std::string name;  // (appends: g++ 12 misreads a chain of + as an overlap, -Wrestrict)
                           for (const auto& [label, value] : {std::pair{"n", c.rows}, {"_m", c.keys}, {"_d", c.dim}}) {
                             name.append(label);
                             name.append(std::to_string(value));
                           }
                           return name;
                         });

}  // namespace
