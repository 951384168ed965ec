// The CUDA backend against two oracles (STYLE.md habit 7): a float64 dense reference written here
// and the CPU backend, driven by the same sequence of backend calls (alternating half-steps with
// the marginal error, symmetric blended steps, an unbalanced damped step, an in-place debiasing
// step, copies, and a plan pass). Sizes cover 1, odd, one-past-a-tile and large, n ≠ m; every
// precision mode; uniform and random weights (with zeros). Every test skips without a GPU.
//
// Tolerances (absolute, on potentials), per half-step, with scale = s·(max‖p‖ + max‖q‖)² the
// largest cost in the problem:
//   vs float64:  operand rounding  2·u_op·scale  (u_op = 2⁻¹¹ tf32, 2⁻⁸ bf16, 2⁻²¹ for 3×TF32)
//                + float32 accumulation/LSE  64·2⁻²⁴·scale,  float64: 1e-12·scale;
//   vs the CPU:  the same rounded operands, so only accumulation order and exp: 64·2⁻²⁴·scale
//                (+ 2⁻²¹·scale for fp32 where the GPU's 3×TF32 is not the CPU's FFMA: rows wider
//                than 16, or FLASHSINKHORN_FP32_DOTS=3xtf32; the default FMA dots on rows of ≤ 16
//                are FFMAs as on the CPU).
// softmin is 1-Lipschitz in the sup norm, so after k half-steps the bound is k times that.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <ostream>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/backend.hpp"
#include "core/prepare.hpp"
#include "core/prepared_cloud.hpp"
#include "cpu/cpu_backend.hpp"
#include "cuda/cuda_backend.hpp"
#include "cuda/device_buffer.hpp"
#include "cuda/kernel_variant.hpp"
#include "cuda/tile_config.hpp"
#include "flashsinkhorn/error.hpp"
#include "gpu/gpu_test_support.hpp"
#include "math/exp2_cubic.hpp"

namespace {

using flashsinkhorn::precision;
using namespace flashsinkhorn::detail;

constexpr double kInf = std::numeric_limits<double>::infinity();

struct shape {
  std::int64_t n, m, d;
  int alternating_iterations;
};

std::string mode_name(precision mode) { return std::string(flashsinkhorn::to_string(mode)); }

using gpu_tests::random_cloud;

// ---- float64 dense reference: the backend contract (backend.hpp) written the obvious way -------
class reference_backend {
 public:
  explicit reference_backend(const prepared_problem& p) : p_(p) {
    for (int s = 0; s < kSlotCount; ++s) slots_[s].assign(static_cast<std::size_t>(cloud(side_of(static_cast<slot>(s))).count), 0.0);
  }
  const prepared_cloud& cloud(side s) const { return s == side::x ? p_.x : p_.y; }

  double cost(const prepared_cloud& rows, std::int64_t i, const prepared_cloud& keys, std::int64_t j) const {
    double d2 = 0;
    for (std::int64_t k = 0; k < rows.dim; ++k) {
      const double t = rows.points[i * rows.dim + k] - keys.points[j * keys.dim + k];
      d2 += t * t;
    }
    return p_.cost_scale * d2;
  }
  // LSE_j [(h_j − C_ij)/ε + log w_j]
  double lse(const prepared_cloud& rows, std::int64_t i, const prepared_cloud& keys, const std::vector<double>* h,
             double eps) const {
    double mx = -kInf;
    std::vector<double> terms(static_cast<std::size_t>(keys.count));
    for (std::int64_t j = 0; j < keys.count; ++j) {
      terms[j] = ((h ? (*h)[j] : 0.0) - cost(rows, i, keys, j)) / eps + keys.log_weights[j];
      mx = std::max(mx, terms[j]);
    }
    if (mx == -kInf) return -kInf;
    double sum = 0;
    for (double t : terms) sum += std::exp(t - mx);
    return mx + std::log(sum);
  }

  void softmin(const softmin_step& step) {
    const prepared_cloud& rows = cloud(step.rows);
    const prepared_cloud& keys = cloud(step.keys);
    const std::vector<double> h = step.key_potential ? slots_[static_cast<int>(*step.key_potential)] : std::vector<double>{};
    const std::vector<double> prev = step.previous ? slots_[static_cast<int>(*step.previous)] : std::vector<double>{};
    std::vector<double>& out = slots_[static_cast<int>(step.out)];
    for (std::int64_t i = 0; i < rows.count; ++i) {
      const double updated = step.damping * (-step.eps * lse(rows, i, keys, step.key_potential ? &h : nullptr, step.eps));
      const double previous = prev.empty() ? 0.0 : prev[i];
      out[i] = (1 - step.blend) * previous + step.blend * updated;
      if (step.accumulate_error && rows.weights[i] > 0) {
        const double e = std::exp((previous - updated) / step.eps);
        error_ += rows.weights[i] * std::abs(e - 1);
        error_scale_ += rows.weights[i] * e / step.eps;  // d error / d(previous − updated), bounds it
      }
    }
  }
  double take_error() { return std::exchange(error_, 0.0); }
  double take_error_scale() { return std::exchange(error_scale_, 0.0); }
  std::vector<double>& potential(slot s) { return slots_[static_cast<int>(s)]; }
  void swap_potentials(slot a, slot b) { std::swap(slots_[static_cast<int>(a)], slots_[static_cast<int>(b)]); }
  void copy_potential(slot dst, slot src) { slots_[static_cast<int>(dst)] = slots_[static_cast<int>(src)]; }

  plan_rows_result plan_rows(const plan_rows_request& r) const {
    const prepared_cloud& rows = cloud(r.rows);
    const prepared_cloud& keys = cloud(r.keys);
    const std::vector<double>& h = slots_[static_cast<int>(r.key_potential)];
    plan_rows_result out;
    out.lse.resize(static_cast<std::size_t>(rows.count));
    out.weighted.assign(static_cast<std::size_t>(rows.count * r.k), 0.0);
    out.cost.assign(r.want_cost ? static_cast<std::size_t>(rows.count) : 0, 0.0);
    for (std::int64_t i = 0; i < rows.count; ++i) {
      const double l = lse(rows, i, keys, &h, r.eps);
      out.lse[i] = l;
      for (std::int64_t j = 0; j < keys.count; ++j) {
        const double c = cost(rows, i, keys, j);
        const double p = std::exp((h[j] - c) / r.eps + keys.log_weights[j] - l);
        for (std::int64_t k = 0; k < r.k; ++k) out.weighted[i * r.k + k] += p * r.values[j * r.k + k];
        if (r.want_cost) out.cost[i] += p * c;
      }
    }
    return out;
  }

 private:
  const prepared_problem& p_;
  std::vector<double> slots_[kSlotCount];
  double error_ = 0;
  double error_scale_ = 0;
};

using gpu_tests::step_tolerance_vs_reference;

// fp32 with FMA dots (the default on narrow rows): the GPU's dots are the CPU's FFMAs in the
// same order, so the 3×TF32 term goes (kernel_variant.hpp).
bool fp32_dots_are_the_cpus(std::int64_t d) {
  return fp32_fma_dots_for(tile::round_up(d, tile::kRowWordMultiple));
}

double step_tolerance_vs_cpu(precision mode, double scale, std::int64_t d) {
  if (mode == precision::fp64) return 1e-12 * scale;
  const bool split_dots = mode == precision::fp32 && !fp32_dots_are_the_cpus(d);
  return (64 * std::ldexp(1.0, -24) + (split_dots ? std::ldexp(1.0, -20) : 0.0)) * scale;
}

// With FLASHSINKHORN_EXP2=split (kernel_variant.hpp) the GPU's predicted tiles take a quarter of their
// exponentials from a cubic (relative error ≤ exp2_cubic_window::kRelativeError, math/exp2_cubic.hpp)
// that the CPU backend does not: a row's LSE moves by at most that, its potential by ε times it, per
// half-step.
double exp2_split_allowance(precision mode, double eps) {
  const bool tensor_mode = mode == precision::tf32 || mode == precision::bf16;
  return tensor_mode && exp2_split_choice() ? flashsinkhorn::math::exp2_cubic_window::kRelativeError * eps : 0.0;
}

double max_abs_diff(const std::vector<double>& a, const std::vector<double>& b) {
  EXPECT_EQ(a.size(), b.size());
  double worst = 0;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) {
    if (std::isinf(a[i]) && a[i] == b[i]) continue;
    const double diff = std::abs(a[i] - b[i]);
    worst = std::isnan(diff) ? kInf : std::max(worst, diff);
  }
  return worst;
}

struct case_params {
  shape size;
  bool random_weights;
  double cost_scale;
};

// Readable parameters in gtest/ctest listings (instead of the bytes of the struct).
void PrintTo(const case_params& c, std::ostream* os) {
  *os << "n=" << c.size.n << " m=" << c.size.m << " d=" << c.size.d << (c.random_weights ? " random" : " uniform")
      << " weights, s=" << c.cost_scale;
}

class cuda_backend_test : public gpu_tests::needs_gpu<::testing::TestWithParam<case_params>> {};

// The same call sequence on every backend; the errors are taken after the alternating loop and
// after the damped step.
template <class Backend>
void run_sequence(Backend& b, double eps, int iterations, bool debias_x, std::vector<double>* errors) {
  auto take = [&](auto& backend) { errors->push_back(backend.take_error()); };
  // f ← T_f(0)
  b.softmin({side::x, side::y, std::nullopt, std::nullopt, slot::f, eps, 1, 1, false});
  for (int it = 0; it < iterations; ++it) {
    b.softmin({side::y, side::x, slot::f, slot::g, slot::g, eps, 1, 1, false});
    b.softmin({side::x, side::y, slot::g, slot::f, slot::f, eps, 1, 1, true});
  }
  take(b);
  // symmetric: f' ← ½(f + T_f(g)), g' ← ½(g + T_g(f)), then swap
  b.softmin({side::x, side::y, slot::g, slot::f, slot::f_next, eps, 1, 0.5, false});
  b.softmin({side::y, side::x, slot::f, slot::g, slot::g_next, eps, 1, 0.5, false});
  b.swap_potentials(slot::f, slot::f_next);
  b.swap_potentials(slot::g, slot::g_next);
  // unbalanced damping on f, error accumulated
  b.softmin({side::x, side::y, slot::g, slot::f, slot::f, eps, 0.7, 1, true});
  take(b);
  // debiasing OT(a, a) and OT(b, b): rows and keys are the same cloud
  for (int it = 0; it < (debias_x ? 2 : 0); ++it) {  // skipped at n = 50,000: the oracles are O(n²)
    b.softmin({side::x, side::x, slot::f_aa, slot::f_aa, slot::f_aa_next, eps, 1, 0.5, false});
    b.swap_potentials(slot::f_aa, slot::f_aa_next);
  }
  b.softmin({side::y, side::y, slot::g_bb, slot::g_bb, slot::g_bb_next, eps, 1, 0.5, false});
  b.swap_potentials(slot::g_bb, slot::g_bb_next);
  b.copy_potential(slot::g_next, slot::g);
}
constexpr int kHalfStepsBesidesLoop = 1 + 2 + 1 + 2 + 1;

TEST_P(cuda_backend_test, matches_cpu_backend_and_float64_reference) {
  const case_params c = GetParam();
  const std::uint64_t seed = 1000003ull * c.size.n + 7919ull * c.size.m + c.size.d + (c.random_weights ? 1 : 0);
  SCOPED_TRACE("n=" + std::to_string(c.size.n) + " m=" + std::to_string(c.size.m) + " d=" + std::to_string(c.size.d) +
               (c.random_weights ? " random" : " uniform") + " weights, s=" + std::to_string(c.cost_scale) +
               ", seed=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  prepared_problem problem;
  problem.x = random_cloud(c.size.n, c.size.d, c.random_weights, rng, 0.0);
  problem.y = random_cloud(c.size.m, c.size.d, c.random_weights, rng, 0.3);
  problem.cost_scale = c.cost_scale;
  centre_clouds(problem);
  const double scale = gpu_tests::largest_cost(problem);
  const double eps = 0.1 * c.cost_scale * static_cast<double>(c.size.d) + 0.05;  // C/ε = O(10)
  const int half_steps = 2 * c.size.alternating_iterations + kHalfStepsBesidesLoop;
  const bool debias_x = c.size.n <= 5000;

  reference_backend reference(problem);
  std::vector<double> reference_errors;
  run_sequence(reference, eps, c.size.alternating_iterations, debias_x, &reference_errors);
  std::vector<double> error_scales;  // recomputed below through a second reference pass
  {
    reference_backend again(problem);
    std::vector<double> ignored;
    // error derivative bounds: run the same sequence and collect the scales at the same points
    again.softmin({side::x, side::y, std::nullopt, std::nullopt, slot::f, eps, 1, 1, false});
    for (int it = 0; it < c.size.alternating_iterations; ++it) {
      again.softmin({side::y, side::x, slot::f, slot::g, slot::g, eps, 1, 1, false});
      again.softmin({side::x, side::y, slot::g, slot::f, slot::f, eps, 1, 1, true});
    }
    error_scales.push_back(again.take_error_scale());
    again.softmin({side::x, side::y, slot::g, slot::f, slot::f_next, eps, 1, 0.5, false});
    again.softmin({side::y, side::x, slot::f, slot::g, slot::g_next, eps, 1, 0.5, false});
    again.swap_potentials(slot::f, slot::f_next);
    again.swap_potentials(slot::g, slot::g_next);
    again.softmin({side::x, side::y, slot::g, slot::f, slot::f, eps, 0.7, 1, true});
    error_scales.push_back(again.take_error_scale());
  }

  std::vector<double> values(static_cast<std::size_t>(c.size.m * 3));
  std::normal_distribution<double> normal(0.0, 1.0);
  for (auto& v : values) v = normal(rng);
  const plan_rows_request plan_request{side::x, side::y, slot::g, eps, values.data(), 3, true};
  const plan_rows_result reference_plan = reference.plan_rows(plan_request);

  for (precision mode : {precision::fp64, precision::fp32, precision::tf32, precision::bf16}) {
    SCOPED_TRACE("precision " + mode_name(mode));
    auto gpu = make_cuda_backend(problem, mode, 0);
    auto cpu = make_cpu_backend(problem, mode, 0);
    std::vector<double> gpu_errors, cpu_errors;
    run_sequence(*gpu, eps, c.size.alternating_iterations, debias_x, &gpu_errors);
    run_sequence(*cpu, eps, c.size.alternating_iterations, debias_x, &cpu_errors);

    const double tol_ref = half_steps * step_tolerance_vs_reference(mode, scale);
    const double tol_cpu = half_steps * (step_tolerance_vs_cpu(mode, scale, c.size.d) + exp2_split_allowance(mode, eps));
    for (slot s : {slot::f, slot::g, slot::f_next, slot::g_next, slot::f_aa, slot::g_bb}) {
      SCOPED_TRACE("slot " + std::to_string(static_cast<int>(s)));
      const std::vector<double> g = gpu->read_potential(s);
      EXPECT_LE(max_abs_diff(g, reference.potential(s)), tol_ref) << "vs float64 reference";
      EXPECT_LE(max_abs_diff(g, cpu->read_potential(s)), tol_cpu) << "vs CPU backend";
    }
    ASSERT_EQ(gpu_errors.size(), reference_errors.size());
    for (std::size_t k = 0; k < gpu_errors.size(); ++k) {
      // The error is Σ w|e^{Δ/ε} − 1|: its sensitivity to Δ is Σ w e^{Δ/ε}/ε (error_scales).
      const double tol = 2 * tol_ref * error_scales[k] + 1e-12;
      EXPECT_NEAR(gpu_errors[k], reference_errors[k], tol) << "marginal error term " << k;
      EXPECT_NEAR(gpu_errors[k], cpu_errors[k], tol) << "marginal error term vs CPU " << k;
    }
    // plan pass: lse within tol/ε; softmax-weighted averages within the weight perturbation.
    const plan_rows_result plan = gpu->plan_rows(plan_request);
    const double lse_tol = (tol_ref + step_tolerance_vs_reference(mode, scale)) / eps;
    EXPECT_LE(max_abs_diff(plan.lse, reference_plan.lse), lse_tol) << "plan lse";
    double v_max = 0;
    for (double v : values) v_max = std::max(v_max, std::abs(v));
    const double weight_tol = std::expm1(2 * lse_tol);  // relative change of each softmax weight
    EXPECT_LE(max_abs_diff(plan.weighted, reference_plan.weighted), weight_tol * v_max + 1e-12) << "plan weighted";
    EXPECT_LE(max_abs_diff(plan.cost, reference_plan.cost),
              weight_tol * scale + step_tolerance_vs_reference(mode, scale)) << "plan cost";
  }
}

INSTANTIATE_TEST_SUITE_P(
    sizes, cuda_backend_test,
    ::testing::Values(case_params{{1, 1, 1, 3}, false, 1.0},
                      case_params{{1, 7, 3, 3}, true, 1.0},
                      case_params{{7, 97, 3, 5}, true, 0.5},
                      case_params{{97, 7, 8, 5}, false, 1.0},
                      case_params{{97, 1025, 1025, 2}, true, 0.5},
                      case_params{{1025, 97, 100, 3}, true, 1.0},
                      case_params{{1025, 1025, 64, 3}, false, 1.0},
                      case_params{{129, 65, 512, 2}, true, 1.0},
                      case_params{{300, 200, 1, 4}, true, 1.0},
                      case_params{{50000, 1025, 3, 1}, true, 1.0},
                      // fp32's narrow-row softmin (softmin_narrow_kernel.cuh): the instances d = 2,
                      // 4, 12 (d = 9…12 on zero columns), 16, split and unsplit key ranges.
                      case_params{{3000, 2000, 2, 2}, true, 1.0},
                      case_params{{2049, 4100, 4, 1}, false, 1.0},
                      case_params{{1000, 5000, 11, 2}, true, 0.5},
                      case_params{{700, 900, 16, 1}, true, 1.0},
                      // Long key runs per CTA (the g-step streams 125 key tiles): the wgmma ring
                      // wraps many times. d = 96: streamed wgmma kernel in tf32 (3 panels),
                      // resident in bf16 (48 words); d = 192: streamed in both.
                      case_params{{16000, 2500, 64, 1}, true, 1.0},
                      case_params{{2500, 3000, 96, 2}, true, 1.0},
                      case_params{{2500, 3000, 192, 1}, false, 1.0},
                      // An odd row-block count over several key splits: with the key pairs forced
                      // on (gpu_check), the last row block's splits run as query pairs — 3 row
                      // blocks × 5 splits of 5 tiles, the last 1: two query pairs and a single
                      // with its ghost (key_pair_layout).
                      case_params{{300, 2600, 96, 2}, true, 1.0},
                      // The widest rows the issue names (d up to 4,096): 128 panels per key tile.
                      case_params{{129, 65, 4096, 1}, true, 1.0}),
    [](const ::testing::TestParamInfo<case_params>& param_info) {
      const auto& c = param_info.param;
      return "n" + std::to_string(c.size.n) + "_m" + std::to_string(c.size.m) + "_d" + std::to_string(c.size.d) +
             (c.random_weights ? "_random" : "_uniform");
    });

// Error paths: a bad device index and a wrong-side slot are exceptions, not crashes.
TEST(cuda_backend_errors, reports_bad_arguments) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  std::mt19937_64 rng(5);
  prepared_problem problem;
  problem.x = random_cloud(5, 2, false, rng, 0);
  problem.y = random_cloud(6, 2, false, rng, 0);
  EXPECT_THROW((void)make_cuda_backend(problem, precision::fp32, cuda_device_count()), flashsinkhorn::unsupported);
  auto gpu = make_cuda_backend(problem, precision::tf32, 0);
  EXPECT_THROW(gpu->softmin({side::x, side::y, slot::f, std::nullopt, slot::f, 1.0, 1, 1, false}),
               flashsinkhorn::invalid_argument);
  EXPECT_THROW(gpu->write_potential(slot::f, std::vector<double>(6)), flashsinkhorn::invalid_argument);
  EXPECT_NE(gpu->name().find("cuda:0"), std::string::npos);
}

// Device memory exhaustion is an out_of_memory exception naming the request, and the device stays
// usable: 2^47 doubles (1 PiB) is more than any GPU holds.
TEST(cuda_backend_errors, out_of_memory_is_an_exception) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  try {
    const device_buffer<double> huge(std::size_t{1} << 47, nullptr);
    FAIL() << "a 1 PiB cudaMalloc succeeded";
  } catch (const flashsinkhorn::out_of_memory& e) {
    EXPECT_NE(std::string(e.what()).find("1125899906842624 bytes"), std::string::npos) << e.what();
  }
  const device_buffer<double> small(1024, nullptr);  // the failed call left no sticky error behind
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

}  // namespace
