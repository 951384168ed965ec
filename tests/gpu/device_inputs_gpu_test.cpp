// Problems whose arrays live in CUDA memory (solver.hpp, "CUDA inputs"): prepared on the device,
// solved into device views, gradients written into device views. Three oracles:
//   parity     the same problem from host arrays on the CUDA backend (same algorithm; the only
//              difference is the order of the preparation's sums: the centring mean may differ in
//              its last bits, which moves a rounded operand by at most one unit of the mode);
//   counting   solver::transfers() — nothing of size n or n·d crosses, the host paths do and say so;
//   messages   bad values on the device raise the host path's exact messages.
// Skips without a GPU.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "cpp/hvp_support.hpp"
#include "cpp/test_problems.hpp"
#include "flashsinkhorn/flashsinkhorn.hpp"

namespace fs = flashsinkhorn;
using testing_support::max_abs;
using testing_support::max_abs_diff;

namespace {

// A cudaMalloc'ed copy of host values, in float64 or float32 (move-only).
class device_array {
 public:
  device_array(const std::vector<double>& values, fs::dtype type)
      : count_(static_cast<std::int64_t>(values.size())), type_(type) {
    const std::size_t bytes = values.size() * static_cast<std::size_t>(fs::size_of(type));
    EXPECT_EQ(cudaMalloc(&data_, std::max<std::size_t>(bytes, 8)), cudaSuccess);
    if (type == fs::dtype::float64) {
      EXPECT_EQ(cudaMemcpy(data_, values.data(), bytes, cudaMemcpyHostToDevice), cudaSuccess);
    } else {
      const std::vector<float> single(values.begin(), values.end());
      EXPECT_EQ(cudaMemcpy(data_, single.data(), bytes, cudaMemcpyHostToDevice), cudaSuccess);
    }
  }
  explicit device_array(std::int64_t count, fs::dtype type = fs::dtype::float64)
      : device_array(std::vector<double>(static_cast<std::size_t>(count), 0.0), type) {}
  ~device_array() { cudaFree(data_); }
  device_array(const device_array&) = delete;
  device_array& operator=(const device_array&) = delete;

  [[nodiscard]] fs::matrix_view matrix(std::int64_t rows, std::int64_t cols) const {
    return {data_, rows, cols, cols, type_, fs::memory_space::cuda, 0};
  }
  [[nodiscard]] fs::mutable_matrix_view mutable_matrix(std::int64_t rows, std::int64_t cols) const {
    return {data_, rows, cols, cols, type_, fs::memory_space::cuda, 0};
  }
  [[nodiscard]] fs::vector_view vector() const { return {data_, count_, 1, type_, fs::memory_space::cuda, 0}; }
  [[nodiscard]] fs::mutable_vector_view mutable_vector() const {
    return {data_, count_, 1, type_, fs::memory_space::cuda, 0};
  }
  [[nodiscard]] std::vector<double> to_host() const {
    std::vector<double> out(static_cast<std::size_t>(count_));
    if (type_ == fs::dtype::float64) {
      EXPECT_EQ(cudaMemcpy(out.data(), data_, out.size() * 8, cudaMemcpyDeviceToHost), cudaSuccess);
    } else {
      std::vector<float> single(out.size());
      EXPECT_EQ(cudaMemcpy(single.data(), data_, single.size() * 4, cudaMemcpyDeviceToHost), cudaSuccess);
      std::copy(single.begin(), single.end(), out.begin());
    }
    return out;
  }
  [[nodiscard]] void* data() const { return data_; }

 private:
  void* data_ = nullptr;
  std::int64_t count_ = 0;
  fs::dtype type_;
};

// x, y, a, b on the device.
struct device_problem {
  device_array x, y, a, b;
  device_problem(const reference::cloud& cx, const reference::cloud& cy, fs::dtype type)
      : x(cx.points, type), y(cy.points, type), a(cx.weights, type), b(cy.weights, type) {}

  [[nodiscard]] fs::problem view(const reference::cloud& cx, const reference::cloud& cy, double eps) const {
    fs::problem p;
    p.x = x.matrix(cx.count, cx.dim);
    p.y = y.matrix(cy.count, cy.dim);
    p.a = a.vector();
    p.b = b.vector();
    p.eps = eps;
    return p;
  }
};

// The host problem with the same (possibly float32-rounded) values as the device one.
std::vector<double> as_stored(const std::vector<double>& values, fs::dtype type) {
  if (type == fs::dtype::float64) return values;
  std::vector<double> out(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) out[i] = static_cast<float>(values[i]);
  return out;
}

fs::options gpu_options(fs::precision mode) {
  fs::options o;
  o.device = fs::device_kind::cuda;
  o.precision = mode;
  o.max_iterations = 60;
  o.tolerance = 0;
  return o;
}

struct configuration {
  const char* name;
  void (*apply)(fs::options&);
};

const configuration kConfigurations[] = {
    {"alternating", [](fs::options&) {}},
    {"symmetric_scaling",
     [](fs::options& o) {
       o.solver = fs::solver_kind::symmetric;
       o.scaling = 0.7;
     }},
    {"debiased", [](fs::options& o) { o.debias = true; }},
    {"unbalanced",
     [](fs::options& o) {
       o.reach_x = 2.0;
       o.reach_y = 1.0;
     }},
    {"cosine", [](fs::options& o) { o.cost = fs::cost_kind::cosine; }},
    {"unnormalised",
     [](fs::options& o) {
       o.normalize_weights = false;
       o.reach_x = o.reach_y = 3.0;
     }},
};

// (configuration index, precision, input dtype).
class DeviceInputs : public ::testing::TestWithParam<std::tuple<int, fs::precision, fs::dtype>> {};

TEST_P(DeviceInputs, MatchTheHostInputsOnTheCudaBackend) {
  if (!fs::cuda_available()) GTEST_SKIP() << "no CUDA device";
  const auto [index, mode, type] = GetParam();
  const configuration& c = kConfigurations[index];
  // Odd sizes, one past a row tile; weights with zeros (random_cloud's are positive: zero a few).
  reference::cloud x = reference::random_cloud(1031, 17, 11);
  reference::cloud y = reference::random_cloud(129, 17, 12, 1.0, 0.4);
  x.weights[5] = 0;
  y.weights[7] = 0;
  x.points = as_stored(x.points, type);
  y.points = as_stored(y.points, type);
  x.weights = as_stored(x.weights, type);
  y.weights = as_stored(y.weights, type);
  const double eps = 1.5;
  fs::options o = gpu_options(mode);
  c.apply(o);

  fs::solver on_host(testing_support::make_problem(x, y, eps, 1.0), o);
  const fs::result want = on_host.solve();
  const device_problem dp(x, y, type);
  fs::solver on_device(dp.view(x, y, eps), o);
  device_array f(x.count), g(y.count), f_aa(x.count), g_bb(y.count), value(1, fs::dtype::float32);
  fs::potential_views views{f.mutable_vector(), g.mutable_vector(), f_aa.mutable_vector(), g_bb.mutable_vector(),
                            value.mutable_vector()};
  const fs::result got = on_device.solve_into(views);

  EXPECT_TRUE(got.f.empty() && got.g.empty()) << "solve_into leaves the result's vectors empty";
  EXPECT_EQ(value.to_host()[0], static_cast<double>(static_cast<float>(got.cost)))
      << "the value is stored on the device, rounded once to the view's dtype";
  EXPECT_EQ(got.iterations, want.iterations);
  // One unit of the mode in a few operands, through 60 iterations: 1e-11 (fp64), 2e-6 (others)
  // of the value's scale.
  const double rel = mode == fs::precision::fp64 ? 1e-11 : 2e-6;
  const double scale = std::max(1.0, max_abs(want.f));
  EXPECT_NEAR(got.cost, want.cost, rel * scale) << c.name;
  EXPECT_NEAR(got.primal_cost, want.primal_cost, rel * scale) << c.name;
  EXPECT_NEAR(got.relative_entropy, want.relative_entropy, rel * scale / eps) << c.name;
  EXPECT_NEAR(got.marginal_error, want.marginal_error, rel * 10) << c.name;
  {  // primal_terms off: the loop alone, then the same terms on demand (reduced on the device)
    fs::options lazy_options = o;
    lazy_options.primal_terms = false;
    fs::solver lazy(dp.view(x, y, eps), lazy_options);
    device_array lf(x.count), lg(y.count), lf_aa(x.count), lg_bb(y.count);
    const fs::result r = lazy.solve_into({lf.mutable_vector(), lg.mutable_vector(), lf_aa.mutable_vector(),
                                          lg_bb.mutable_vector(), {}});
    EXPECT_TRUE(std::isnan(r.primal_cost) && std::isnan(r.relative_entropy)) << c.name;
    EXPECT_NEAR(r.cost, got.cost, rel * scale) << c.name;
    const fs::objective_terms terms = lazy.primal_objective();
    EXPECT_NEAR(terms.primal_cost, got.primal_cost, rel * scale) << c.name;
    EXPECT_NEAR(terms.relative_entropy, got.relative_entropy, rel * scale / eps) << c.name;
  }
  EXPECT_LT(max_abs_diff(f.to_host(), want.f), rel * scale) << c.name;
  EXPECT_LT(max_abs_diff(g.to_host(), want.g), rel * scale) << c.name;
  if (o.debias) {
    EXPECT_LT(max_abs_diff(f_aa.to_host(), want.f_aa), rel * scale) << c.name;
    EXPECT_LT(max_abs_diff(g_bb.to_host(), want.g_bb), rel * scale) << c.name;
  }

  // Gradients into device views (float64 outputs) against the host-input solver's host outputs.
  for (bool wrt_y : {false, true}) {
    const std::int64_t rows = wrt_y ? y.count : x.count;
    std::vector<double> host_grad(static_cast<std::size_t>(rows * x.dim));
    device_array device_grad(rows * x.dim);
    const fs::mutable_matrix_view host_out = fs::host_matrix(host_grad.data(), rows, x.dim);
    if (wrt_y) {
      on_host.gradient_y(host_out);
      on_device.gradient_y(device_grad.mutable_matrix(rows, x.dim));
    } else {
      on_host.gradient_x(host_out);
      on_device.gradient_x(device_grad.mutable_matrix(rows, x.dim));
    }
    const double grad_scale = std::max(1e-12, max_abs(host_grad));
    EXPECT_LT(max_abs_diff(device_grad.to_host(), host_grad), 10 * rel * grad_scale)
        << c.name << (wrt_y ? " ∇y" : " ∇x");
  }
}

std::string configuration_name(const ::testing::TestParamInfo<DeviceInputs::ParamType>& info) {
  const auto [index, mode, type] = info.param;
  return std::string(kConfigurations[index].name) + "_" + std::string(fs::to_string(mode)) +
         (type == fs::dtype::float32 ? "_f32in" : "_f64in");
}

INSTANTIATE_TEST_SUITE_P(Configurations, DeviceInputs,
                         ::testing::Combine(::testing::Range(0, 6),
                                            ::testing::Values(fs::precision::fp32, fs::precision::fp64,
                                                              fs::precision::tf32, fs::precision::bf16),
                                            ::testing::Values(fs::dtype::float32, fs::dtype::float64)),
                         configuration_name);

// A problem large enough that any copy of a vector or matrix stands out from the scalars.
constexpr std::int64_t kN = 3001, kM = 2503, kD = 5;
constexpr std::int64_t kScalarBytes = 128;  // the largest scalar read: the validation flags with the diameter (104 bytes)

TEST(DeviceInputsTransfers, SolveAndPointGradientsMoveOnlyScalars) {
  if (!fs::cuda_available()) GTEST_SKIP() << "no CUDA device";
  for (int variant = 0; variant < 3; ++variant) {  // plain, debiased, cosine (its chain rule on the device)
    const bool debias = variant == 1;
    const reference::cloud x = reference::random_cloud(kN, kD, 21);
    const reference::cloud y = reference::random_cloud(kM, kD, 22, 1.0, 0.3);
    const device_problem dp(x, y, fs::dtype::float32);
    fs::options o = gpu_options(fs::precision::fp32);
    o.max_iterations = 200;
    o.tolerance = 1e-6;
    o.debias = debias;
    if (variant == 2) o.cost = fs::cost_kind::cosine;
    fs::solver s(dp.view(x, y, 0.5), o);
    device_array f(kN, fs::dtype::float32), g(kM, fs::dtype::float32), gx(kN * kD, fs::dtype::float32),
        gy(kM * kD, fs::dtype::float32), f_aa(kN, fs::dtype::float32), g_bb(kM, fs::dtype::float32);
    const fs::result r =
        s.solve_into({f.mutable_vector(), g.mutable_vector(), f_aa.mutable_vector(), g_bb.mutable_vector(), {}});
    s.gradient_x(gx.mutable_matrix(kN, kD));
    s.gradient_y(gy.mutable_matrix(kM, kD));
    const fs::transfer_statistics t = s.transfers();
    SCOPED_TRACE("variant=" + std::to_string(variant) + " iterations=" + std::to_string(r.iterations));
    EXPECT_EQ(t.host_to_device_bytes, 0);
    EXPECT_LE(t.largest_copy_bytes, kScalarBytes);
    // The flags, a diameter, one error per check, the value's and primal terms' sums.
    EXPECT_LT(t.device_to_host_bytes, 1024 + 8 * (r.iterations + 1));
    EXPECT_TRUE(std::isfinite(r.cost));
  }
}

TEST(DeviceInputsTransfers, HostPathsAreCountedAndHostInputsUploadOnce) {
  if (!fs::cuda_available()) GTEST_SKIP() << "no CUDA device";
  const reference::cloud x = reference::random_cloud(kN, kD, 23);
  const reference::cloud y = reference::random_cloud(kM, kD, 24);
  fs::options o = gpu_options(fs::precision::fp32);
  // Host inputs: the prepared clouds are uploaded (the counter sees copies of n·d numbers).
  fs::solver from_host(testing_support::make_problem(x, y, 0.5, 1.0), o);
  EXPECT_GE(from_host.transfers().largest_copy_bytes, kN * kD * 4);
  // Device inputs: nothing bulk until a host path runs; barycentric_projection copies the inputs
  // to the host once and downloads its pass.
  const device_problem dp(x, y, fs::dtype::float64);
  fs::solver s(dp.view(x, y, 0.5), o);
  device_array f(kN), g(kM);
  s.solve_into({f.mutable_vector(), g.mutable_vector(), {}, {}, {}});
  EXPECT_LE(s.transfers().largest_copy_bytes, kScalarBytes);
  std::vector<double> projection(static_cast<std::size_t>(kN * kD));
  s.barycentric_projection(fs::host_matrix(projection.data(), kN, kD));
  EXPECT_GE(s.transfers().largest_copy_bytes, kN * kD * 8);
  // And it agrees with the same projection from host inputs.
  std::vector<double> want(projection.size());
  from_host.solve();
  from_host.barycentric_projection(fs::host_matrix(want.data(), kN, kD));
  EXPECT_LT(max_abs_diff(projection, want), 1e-4 * std::max(1.0, max_abs(want)));
}

// The message of the exception `make` throws, or "" when it does not throw invalid_argument.
template <class Make>
std::string invalid_argument_message(const Make& make) {
  try {
    make();
  } catch (const fs::invalid_argument& e) {
    return e.what();
  }
  return "";
}

// A warm start from device potentials: checked and copied on the device (no array crosses), the
// same solve as the warm start from host potentials; a non-finite potential gets the host's message.
TEST(DeviceInputsWarmStart, MatchesTheHostWarmStartAndChecksTheValues) {
  if (!fs::cuda_available()) GTEST_SKIP() << "no CUDA device";
  const reference::cloud x = reference::random_cloud(kN, kD, 51);
  const reference::cloud y = reference::random_cloud(kM, kD, 52, 1.0, 0.3);
  const device_problem dp(x, y, fs::dtype::float64);
  fs::options o = gpu_options(fs::precision::fp64);
  o.max_iterations = 7;
  device_array f0(kN), g0(kM);
  fs::solver(dp.view(x, y, 0.4), o).solve_into({f0.mutable_vector(), g0.mutable_vector(), {}, {}, {}});
  const std::vector<double> host_f0 = f0.to_host(), host_g0 = g0.to_host();

  fs::problem warm_on_device = dp.view(x, y, 0.4);
  warm_on_device.initial_f = f0.vector();
  warm_on_device.initial_g = g0.vector();
  fs::solver s(warm_on_device, o);
  device_array f(kN), g(kM);
  const fs::result got = s.solve_into({f.mutable_vector(), g.mutable_vector(), {}, {}, {}});
  EXPECT_LE(s.transfers().largest_copy_bytes, kScalarBytes);
  EXPECT_EQ(s.transfers().host_to_device_bytes, 0);

  fs::problem warm_on_host = testing_support::make_problem(x, y, 0.4, 1.0);
  warm_on_host.initial_f = fs::host_vector(host_f0.data(), kN);
  warm_on_host.initial_g = fs::host_vector(host_g0.data(), kM);
  const fs::result want = fs::solver(warm_on_host, o).solve();
  EXPECT_NEAR(got.cost, want.cost, 1e-11 * std::max(1.0, std::abs(want.cost)));
  EXPECT_LT(max_abs_diff(f.to_host(), want.f), 1e-10 * std::max(1.0, max_abs(want.f)));
  // A cold solve of 7 iterations is elsewhere: the warm start was used.
  const fs::result cold = fs::solver(dp.view(x, y, 0.4), o).solve();
  EXPECT_GT(std::abs(cold.cost - want.cost), 1e-9);

  std::vector<double> spoiled = host_g0;
  spoiled[3] = std::nan("");
  const device_array bad_g(spoiled, fs::dtype::float64);
  warm_on_device.initial_g = bad_g.vector();
  warm_on_host.initial_g = fs::host_vector(spoiled.data(), kM);
  EXPECT_EQ(invalid_argument_message([&] { fs::solver(warm_on_device, o); }), "initial_g is not finite at index 3");
  EXPECT_EQ(invalid_argument_message([&] { fs::solver(warm_on_host, o); }), "initial_g is not finite at index 3");
}

// The caller's stream orders the reads: X is written on the caller's stream after a host callback
// that sleeps; a backend that did not wait for that stream would read the NaNs X held before.
TEST(DeviceInputsStream, InputsAreReadAfterTheCallersStreamWork) {
  if (!fs::cuda_available()) GTEST_SKIP() << "no CUDA device";
  const reference::cloud x = reference::random_cloud(257, 3, 31);
  const reference::cloud y = reference::random_cloud(300, 3, 32);
  const device_problem dp(x, y, fs::dtype::float64);
  ASSERT_EQ(cudaMemset(dp.x.data(), 0xFF, x.points.size() * sizeof(double)), cudaSuccess);  // NaN
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  cudaStream_t caller = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&caller, cudaStreamNonBlocking), cudaSuccess);
  const auto sleep = [](void*) { std::this_thread::sleep_for(std::chrono::milliseconds(200)); };
  ASSERT_EQ(cudaLaunchHostFunc(caller, sleep, nullptr), cudaSuccess);
  ASSERT_EQ(
      cudaMemcpyAsync(dp.x.data(), x.points.data(), x.points.size() * sizeof(double), cudaMemcpyHostToDevice, caller),
      cudaSuccess);
  fs::options o = gpu_options(fs::precision::fp64);
  o.cuda_stream = reinterpret_cast<std::uintptr_t>(caller);
  fs::solver s(dp.view(x, y, 0.7), o);  // no host wait before: the order is the stream's
  device_array f(x.count), g(y.count);
  const fs::result got = s.solve_into({f.mutable_vector(), g.mutable_vector(), {}, {}, {}});
  const fs::result want =
      fs::solver(testing_support::make_problem(x, y, 0.7, 1.0), gpu_options(fs::precision::fp64)).solve();
  EXPECT_NEAR(got.cost, want.cost, 1e-10 * std::max(1.0, std::abs(want.cost)));
  ASSERT_EQ(cudaStreamDestroy(caller), cudaSuccess);
}

// The outputs are the caller's stream's to read, with no host wait in between: the backend hands
// each output over with an event (caller_stream.hpp), not a synchronisation. On a non-blocking
// caller's stream, the potentials and a gradient (a plan pass of ~0.1 ms at this size) are copied
// back on that stream the moment the calls return, into buffers first filled with NaN; a handover
// that did not order the caller's stream would copy NaN (or a half-written gradient). The same
// solve with host outputs is the oracle (the same kernels: equal to rounding).
TEST(DeviceInputsStream, OutputsAreReadInTheCallersStreamOrder) {
  if (!fs::cuda_available()) GTEST_SKIP() << "no CUDA device";
  constexpr std::int64_t kRows = 20000, kKeys = 18000, kDim = 3;
  const reference::cloud x = reference::random_cloud(kRows, kDim, 51);
  const reference::cloud y = reference::random_cloud(kKeys, kDim, 52);
  const device_problem dp(x, y, fs::dtype::float32);
  cudaStream_t caller = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&caller, cudaStreamNonBlocking), cudaSuccess);
  fs::options o = gpu_options(fs::precision::fp32);
  o.max_iterations = 5;
  o.cuda_stream = reinterpret_cast<std::uintptr_t>(caller);
  device_array f(kRows, fs::dtype::float32), g(kKeys, fs::dtype::float32), gx(kRows * kDim, fs::dtype::float32);
  ASSERT_EQ(cudaMemset(f.data(), 0xFF, kRows * sizeof(float)), cudaSuccess);  // NaN
  ASSERT_EQ(cudaMemset(gx.data(), 0xFF, kRows * kDim * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<float> f_read(kRows), gx_read(kRows * kDim);
  fs::solver s(dp.view(x, y, 0.3), o);
  s.solve_into({f.mutable_vector(), g.mutable_vector(), {}, {}, {}});
  ASSERT_EQ(cudaMemcpyAsync(f_read.data(), f.data(), kRows * sizeof(float), cudaMemcpyDeviceToHost, caller), cudaSuccess);
  s.gradient_x(gx.mutable_matrix(kRows, kDim));
  ASSERT_EQ(cudaMemcpyAsync(gx_read.data(), gx.data(), gx_read.size() * sizeof(float), cudaMemcpyDeviceToHost, caller),
            cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(caller), cudaSuccess);

  fs::options on_host = o;
  on_host.cuda_stream.reset();
  fs::solver oracle(dp.view(x, y, 0.3), on_host);
  const fs::result want = oracle.solve();
  std::vector<double> want_gx(static_cast<std::size_t>(kRows * kDim));
  oracle.gradient_x(fs::host_matrix(want_gx.data(), kRows, kDim));
  const std::vector<double> got_f(f_read.begin(), f_read.end()), got_gx(gx_read.begin(), gx_read.end());
  EXPECT_LE(max_abs_diff(got_f, want.f), 1e-5 * std::max(1.0, max_abs(want.f)));
  EXPECT_LE(max_abs_diff(got_gx, want_gx), 1e-5 * std::max(1.0, max_abs(want_gx)));
  ASSERT_EQ(cudaStreamDestroy(caller), cudaSuccess);
}

struct bad_value_case {
  const char* name;
  void (*spoil)(reference::cloud& x, reference::cloud& y);
  bool cosine;
  const char* expected;  // the host path's message, which the device path must give too
};

const bad_value_case kBadValues[] = {
    {"nan_in_x", [](reference::cloud& x, reference::cloud&) { x.points[7 * 4 + 2] = std::nan(""); }, false,
     "X contains NaN at row 7, column 2"},
    {"inf_in_y",
     [](reference::cloud&, reference::cloud& y) { y.points[3 * 4 + 0] = -std::numeric_limits<double>::infinity(); },
     false, "Y contains Inf at row 3, column 0"},
    {"two_bad_rows_first_wins",
     [](reference::cloud& x, reference::cloud&) {
       x.points[40 * 4 + 1] = std::nan("");
       x.points[9 * 4 + 3] = std::numeric_limits<double>::infinity();
     },
     false, "X contains Inf at row 9, column 3"},
    {"negative_weight", [](reference::cloud&, reference::cloud& y) { y.weights[5] = -0.5; }, false,
     "b has a negative weight -0.5 at index 5"},
    {"nan_weight_before_negative",
     [](reference::cloud& x, reference::cloud&) {
       x.weights[8] = -1;
       x.weights[2] = std::nan("");
     },
     false, "a contains NaN at index 2"},
    {"all_zero_weights",
     [](reference::cloud& x, reference::cloud&) { std::fill(x.weights.begin(), x.weights.end(), 0.0); }, false,
     "a: all weights are zero"},
    {"zero_row_cosine", [](reference::cloud&, reference::cloud& y) { std::fill_n(y.points.begin() + 4 * 4, 4, 0.0); },
     true, "Y row 4 is zero; the cosine cost is undefined for it"},
};

class DeviceInputErrors : public ::testing::TestWithParam<int> {};

TEST_P(DeviceInputErrors, RaiseTheHostPathsMessage) {
  if (!fs::cuda_available()) GTEST_SKIP() << "no CUDA device";
  const bad_value_case& c = kBadValues[GetParam()];
  reference::cloud x = reference::random_cloud(50, 4, 41);
  reference::cloud y = reference::random_cloud(60, 4, 42);
  c.spoil(x, y);
  fs::options o = gpu_options(fs::precision::fp32);
  if (c.cosine) o.cost = fs::cost_kind::cosine;
  const std::string host =
      invalid_argument_message([&] { fs::solver(testing_support::make_problem(x, y, 0.5, 1.0), o); });
  EXPECT_EQ(host, c.expected);
  for (fs::dtype type : {fs::dtype::float64, fs::dtype::float32}) {
    const device_problem dp(x, y, type);
    const std::string device = invalid_argument_message([&] { fs::solver(dp.view(x, y, 0.5), o); });
    EXPECT_EQ(device, c.expected) << (type == fs::dtype::float32 ? "float32" : "float64");
  }
  EXPECT_EQ(cudaGetLastError(), cudaSuccess) << "a bad input must not leave a CUDA error behind";
}

std::string bad_value_name(const ::testing::TestParamInfo<int>& info) { return kBadValues[info.param].name; }

INSTANTIATE_TEST_SUITE_P(BadValues, DeviceInputErrors, ::testing::Range(0, 7), bad_value_name);

// Strided views of wide rows: d = 300 spans two CTAs of the column statistics (the second partly
// empty), and the padding between rows holds NaN, which a read past a row's end would turn into an
// error or a NaN result. The same solve as from host arrays; a NaN among the last coordinates is
// named at its row and column.
TEST(DeviceInputsStrided, WideRowsAreReadThroughTheirStride) {
  if (!fs::cuda_available()) GTEST_SKIP() << "no CUDA device";
  constexpr std::int64_t kDim = 300, kStride = 307;
  reference::cloud x = reference::random_cloud(700, kDim, 51);
  reference::cloud y = reference::random_cloud(515, kDim, 52, 1.0, 0.3);
  x.points = as_stored(x.points, fs::dtype::float32);
  y.points = as_stored(y.points, fs::dtype::float32);
  const auto strided = [&](const reference::cloud& c) {
    std::vector<double> rows(static_cast<std::size_t>(c.count * kStride), std::nan(""));
    for (std::int64_t r = 0; r < c.count; ++r)
      std::copy_n(c.points.begin() + r * kDim, kDim, rows.begin() + r * kStride);
    return rows;
  };
  const device_array dx(strided(x), fs::dtype::float32), dy(strided(y), fs::dtype::float32);
  const device_array a(x.weights, fs::dtype::float64), b(y.weights, fs::dtype::float64);
  const auto view = [&](const device_array& points, const reference::cloud& c) {
    return fs::matrix_view{points.data(), c.count, kDim, kStride, fs::dtype::float32, fs::memory_space::cuda, 0};
  };
  const double eps = 30;
  const auto problem_with = [&](const device_array& y_points) {
    fs::problem p;
    p.x = view(dx, x);
    p.y = view(y_points, y);
    p.a = a.vector();
    p.b = b.vector();
    p.eps = eps;
    return p;
  };
  for (fs::precision mode : {fs::precision::fp64, fs::precision::tf32}) {
    fs::options o = gpu_options(mode);
    o.max_iterations = 30;
    fs::solver on_host(testing_support::make_problem(x, y, eps, 1.0), o);
    const fs::result want = on_host.solve();
    fs::solver on_device(problem_with(dy), o);
    device_array f(x.count), g(y.count);
    const fs::result got = on_device.solve_into({f.mutable_vector(), g.mutable_vector(), {}, {}, {}});
    const double rel = mode == fs::precision::fp64 ? 1e-11 : 2e-6;
    const double scale = std::max(1.0, max_abs(want.f));
    SCOPED_TRACE(std::string(fs::to_string(mode)));
    EXPECT_NEAR(got.cost, want.cost, rel * scale);
    EXPECT_LT(max_abs_diff(f.to_host(), want.f), rel * scale);
    EXPECT_LT(max_abs_diff(g.to_host(), want.g), rel * scale);
  }
  std::vector<double> spoiled = strided(y);
  spoiled[static_cast<std::size_t>(4 * kStride + 297)] = std::nan("");
  const device_array bad_y(spoiled, fs::dtype::float32);
  EXPECT_EQ(invalid_argument_message([&] { fs::solver(problem_with(bad_y), gpu_options(fs::precision::tf32)); }),
            "Y contains NaN at row 4, column 297");
}

TEST(DeviceInputErrors, MixedMemoryAndAWrongDeviceAreNamed) {
  if (!fs::cuda_available()) GTEST_SKIP() << "no CUDA device";
  const reference::cloud x = reference::random_cloud(50, 4, 43);
  const reference::cloud y = reference::random_cloud(60, 4, 44);
  const device_problem dp(x, y, fs::dtype::float64);
  const fs::options o = gpu_options(fs::precision::fp32);
  fs::problem mixed = dp.view(x, y, 0.5);
  mixed.a = fs::host_vector(x.weights.data(), x.count);
  EXPECT_NE(
      invalid_argument_message([&] { fs::solver(mixed, o); }).find("a lives in host memory but X lives in CUDA memory"),
      std::string::npos);
  int devices = 0;
  ASSERT_EQ(cudaGetDeviceCount(&devices), cudaSuccess);
  fs::problem elsewhere = dp.view(x, y, 0.5);
  elsewhere.y.device = devices;  // a device the solver does not run on
  EXPECT_NE(invalid_argument_message([&] {
              fs::solver(elsewhere, o);
            }).find("Y lives on CUDA device " + std::to_string(devices) + ", the solver runs on device 0"),
            std::string::npos);
  // Unequal masses without normalisation: the host path's message, from the device's sums.
  fs::options unnormalised = o;
  unnormalised.normalize_weights = false;
  reference::cloud heavy = y;
  for (double& w : heavy.weights) w *= 2;
  const device_problem uneven(x, heavy, fs::dtype::float64);
  const std::string host_message =
      invalid_argument_message([&] { fs::solver(testing_support::make_problem(x, heavy, 0.5, 1.0), unnormalised); });
  EXPECT_NE(host_message.find("balanced OT needs equal masses"), std::string::npos);
  EXPECT_EQ(invalid_argument_message([&] { fs::solver(uneven.view(x, heavy, 0.5), unnormalised); }), host_message);
}

// The float64 redo of a single-precision HVP (core/float64_replica.hpp) on device inputs: the
// replica prepares the caller's CUDA arrays again, in float64, on the device (not the host copy
// that the HVP's own terms read). A near-matching plan in tf32 (2,000 × 64, ε = 0.1, 10 iterations)
// breaks the sparse CG down (the suite's session-10 rows); the product must reach the tolerance and
// agree with the one the same arrays give as host inputs.
TEST(DeviceInputsFloat64Redo, NearMatchingHvpMatchesTheHostInputs) {
  if (!fs::cuda_available()) GTEST_SKIP() << "no CUDA device";
  const reference::cloud x = reference::random_cloud(2000, 64, 91);
  const reference::cloud y = reference::random_cloud(2000, 64, 92);
  const device_problem dp(x, y, fs::dtype::float64);
  fs::options o = gpu_options(fs::precision::tf32);
  o.max_iterations = 10;
  fs::hvp_options settings;
  settings.tolerance = 1e-4;
  settings.max_iterations = 600;
  settings.preconditioner = fs::cg_preconditioner::sparse_plan;
  const std::vector<double> direction = testing_support::random_direction(x.count * x.dim, 93);
  fs::solver on_device(dp.view(x, y, 0.1), o);
  fs::solver on_host(testing_support::make_problem(x, y, 0.1, 1.0), o);
  on_device.solve();
  on_host.solve();
  fs::hvp_report device_report, host_report;
  const std::vector<double> got = testing_support::library_hvp(on_device, x, true, direction, settings, &device_report);
  const std::vector<double> want = testing_support::library_hvp(on_host, x, true, direction, settings, &host_report);
  std::cout << "[ tf32, 2000 x 64, device inputs ] CG iterations " << device_report.cg_iterations
            << ", redone in float64 " << device_report.redone_in_float64 << " (host inputs: "
            << host_report.cg_iterations << ", " << host_report.redone_in_float64 << "); relative difference "
            << testing_support::relative_max_error(got, want) << "\n";
  EXPECT_TRUE(device_report.converged) << device_report.relative_residual;
  EXPECT_TRUE(host_report.converged) << host_report.relative_residual;
  // Both solves are tf32 ones prepared apart (on the device, on the host): their plans differ by
  // tf32's rounding, which this ill-conditioned system amplifies (fp32 against float64 on the CPU:
  // 1.3e-2, NearMatchingFp32PlanIsRedoneInFloat64).
  EXPECT_LT(testing_support::relative_max_error(got, want), 1e-1);
}

}  // namespace
