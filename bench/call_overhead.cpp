// The C++ side of the Python call-overhead benchmark (issue 6: "a Python call at n = m = 1,000
// within 20 µs of the C++ call"). Times `flashsinkhorn::solver(p, o).solve()` — construction
// (validation, centring, conversion) plus the loop, exactly what one `flashsinkhorn.sinkhorn()`
// call does — on the points bench/python_call_overhead.py hands over in a raw file, so both sides
// solve the same problem. Prints one JSON line: median, quartiles, min, max of the wall time.
//   flashsinkhorn_call_overhead --data FILE --n N --m M --d D --dtype float32|float64
//                               [--eps E] [--iters 10] [--threads 1] [--repeats 2000] [--warmup 50]
//                               [--gradient 0|1] [--device cpu|cuda] [--precision fp32|fp64|tf32|bf16]
// --gradient 1 also times gradient_x(out) after the solve (what SamplesLoss forward+backward does).
// --device cuda: what a call on torch CUDA tensors does — the points are copied once into device
// memory and passed as CUDA views (read in place on GPU 0, in the order of the legacy default
// stream, 0, which is torch's current stream unless the caller set another), and each call is
// solver(p, o).solve_into(out) with f, g, the cost (and the gradient) written into device buffers made once
// (torch's caching allocator hands the Python side its outputs without a cudaMalloc either). Only
// in a build with the CUDA backend (FLASHSINKHORN_HAS_CUDA); elsewhere it exits 3, naming why.
// `slack` is wall time minus the result's own total_seconds (the solver's internal clock), per call:
// the part of the call the library does not time itself; the Python benchmark subtracts the same
// quantity measured around the Python call, which cancels the (noisy) solve time.
// FILE: x (n×d, row-major) then y (m×d), in --dtype. Options: alternating, tol = 0, fixed iterations,
// precision following the dtype (fp32 / fp64) unless --precision, weights uniform.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "flashsinkhorn/flashsinkhorn.hpp"

#ifdef FLASHSINKHORN_CALL_OVERHEAD_CUDA
#include <cuda_runtime_api.h>
#endif

namespace fs = flashsinkhorn;

namespace {

// Whether the library this program links was built with -march=native (FLASHSINKHORN_NATIVE): the
// Python side must be built alike for the comparison to be like for like.
#ifdef FLASHSINKHORN_CALL_OVERHEAD_NATIVE
constexpr bool kNative = FLASHSINKHORN_CALL_OVERHEAD_NATIVE;
#else
constexpr bool kNative = false;
#endif

struct args {
  std::string data;
  long n = 1000, m = 1000, d = 3;
  std::string type = "float32";
  double eps = 0.1;
  int iters = 10, threads = 1, repeats = 2000, warmup = 50;
  bool gradient = false;
  bool cuda = false;
  std::string precision;  // empty: following the dtype
};

args parse(int argc, char** argv) {
  args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    const char* v = argv[i + 1];
    if (k == "--data") a.data = v;
    else if (k == "--n") a.n = std::atol(v);
    else if (k == "--m") a.m = std::atol(v);
    else if (k == "--d") a.d = std::atol(v);
    else if (k == "--dtype") a.type = v;
    else if (k == "--eps") a.eps = std::atof(v);
    else if (k == "--iters") a.iters = std::atoi(v);
    else if (k == "--threads") a.threads = std::atoi(v);
    else if (k == "--repeats") a.repeats = std::atoi(v);
    else if (k == "--warmup") a.warmup = std::atoi(v);
    else if (k == "--gradient") a.gradient = std::atoi(v) != 0;
    else if (k == "--device") a.cuda = std::string(v) == "cuda";
    else if (k == "--precision") a.precision = v;
    else {
      std::fprintf(stderr, "unknown argument %s\n", k.c_str());
      std::exit(2);
    }
  }
  if (a.data.empty() || (a.type != "float32" && a.type != "float64")) {
    std::fprintf(stderr, "usage: %s --data FILE --n N --m M --d D --dtype float32|float64 [...]\n", argv[0]);
    std::exit(2);
  }
  return a;
}

double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<std::size_t>(pos);
  const std::size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (pos - static_cast<double>(lo)) * (v[hi] - v[lo]);
}

bool precision_of(const std::string& name, fs::precision& out) {
  if (name == "fp32") out = fs::precision::fp32;
  else if (name == "fp64") out = fs::precision::fp64;
  else if (name == "tf32") out = fs::precision::tf32;
  else if (name == "bf16") out = fs::precision::bf16;
  else return false;
  return true;
}

#ifdef FLASHSINKHORN_CALL_OVERHEAD_CUDA
// A cudaMalloc'ed buffer (GPU 0), optionally filled from host bytes; exits 1 on a CUDA error.
class device_bytes {
 public:
  explicit device_bytes(std::size_t size, const void* from = nullptr) {
    check(cudaMalloc(&data_, std::max<std::size_t>(size, 8)), "cudaMalloc");
    if (from != nullptr) check(cudaMemcpy(data_, from, size, cudaMemcpyHostToDevice), "cudaMemcpy");
  }
  ~device_bytes() { cudaFree(data_); }
  device_bytes(const device_bytes&) = delete;
  device_bytes& operator=(const device_bytes&) = delete;
  [[nodiscard]] char* data() const noexcept { return static_cast<char*>(data_); }

 private:
  static void check(cudaError_t status, const char* what) {
    if (status != cudaSuccess) {
      std::fprintf(stderr, "%s failed: %s\n", what, cudaGetErrorString(status));
      std::exit(1);
    }
  }
  void* data_ = nullptr;
};
#endif

}  // namespace

int main(int argc, char** argv) {
  const args a = parse(argc, argv);
  const bool single = a.type == "float32";
  const std::size_t item = single ? 4 : 8;
  std::vector<char> bytes(static_cast<std::size_t>((a.n + a.m) * a.d) * item);
  std::ifstream in(a.data, std::ios::binary);
  if (!in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()))) {
    std::fprintf(stderr, "cannot read %zu bytes from %s\n", bytes.size(), a.data.c_str());
    return 1;
  }
  fs::options o;
  o.solver = fs::solver_kind::alternating;
  o.precision = single ? fs::precision::fp32 : fs::precision::fp64;
  if (!a.precision.empty() && !precision_of(a.precision, o.precision)) {
    std::fprintf(stderr, "unknown precision %s (fp32, fp64, tf32, bf16)\n", a.precision.c_str());
    return 2;
  }
  o.device = a.cuda ? fs::device_kind::cuda : fs::device_kind::cpu;
  o.max_iterations = a.iters;
  o.tolerance = 0;
  o.cpu_threads = a.threads;
  o.primal_terms = false;  // as the Python package solves (its results compute them when first read)

  const fs::dtype type = single ? fs::dtype::float32 : fs::dtype::float64;
  const fs::memory_space space = a.cuda ? fs::memory_space::cuda : fs::memory_space::host;
  const std::size_t x_bytes = static_cast<std::size_t>(a.n * a.d) * item;
  // Host memory, or (--device cuda) device copies of the points and device outputs made once.
  char* points = bytes.data();
  std::vector<char> gradient_host(x_bytes);
  char* gradient = gradient_host.data();
  char* potentials = nullptr;
#ifdef FLASHSINKHORN_CALL_OVERHEAD_CUDA
  std::unique_ptr<device_bytes> points_device, gradient_device, potentials_device;
  if (a.cuda) {
    if (!fs::cuda_available()) {
      std::fprintf(stderr, "--device cuda: no CUDA device is visible\n");
      return 3;
    }
    o.cuda_device = 0;
    o.cuda_stream = 0;  // the legacy default stream: torch's current stream by default
    points_device = std::make_unique<device_bytes>(bytes.size(), bytes.data());
    gradient_device = std::make_unique<device_bytes>(x_bytes);
    potentials_device = std::make_unique<device_bytes>(static_cast<std::size_t>(a.n + a.m + 1) * item);
    points = points_device->data();
    gradient = gradient_device->data();
    potentials = potentials_device->data();
  }
#else
  if (a.cuda) {
    std::fprintf(stderr, "--device cuda: this program was built without the CUDA backend (FLASHSINKHORN_CUDA)\n");
    return 3;
  }
#endif
  fs::problem p;
  p.x = fs::matrix_view{points, a.n, a.d, a.d, type, space, 0};
  p.y = fs::matrix_view{points + x_bytes, a.m, a.d, a.d, type, space, 0};
  p.eps = a.eps;
  // --device cuda: f, g and the cost into device memory (solve_into), laid out as the Python call's
  // one output tensor [f | g | cost]
  fs::potential_views out;
  if (potentials != nullptr) {
    out.f = fs::mutable_vector_view{potentials, a.n, 1, type, space, 0};
    out.g = fs::mutable_vector_view{potentials + static_cast<std::size_t>(a.n) * item, a.m, 1, type, space, 0};
    out.cost = fs::mutable_vector_view{potentials + static_cast<std::size_t>(a.n + a.m) * item, 1, 1, type, space, 0};
  }

  double sink = 0;  // keeps the result observable
  const fs::mutable_matrix_view gradient_out{gradient, a.n, a.d, a.d, type, space, 0};
  std::vector<double> seconds, slack, core;
  seconds.reserve(static_cast<std::size_t>(a.repeats));
  slack.reserve(static_cast<std::size_t>(a.repeats));
  core.reserve(static_cast<std::size_t>(a.repeats));
  for (int r = 0; r < a.warmup + a.repeats; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    fs::solver s(p, o);
    const fs::result res = potentials != nullptr ? s.solve_into(out) : s.solve();
    if (a.gradient) s.gradient_x(gradient_out);
    const auto t1 = std::chrono::steady_clock::now();
    sink += res.cost;
    const double wall = std::chrono::duration<double>(t1 - t0).count();
    if (r >= a.warmup) {
      seconds.push_back(wall);
      slack.push_back(wall - res.time.total_seconds);
      core.push_back(res.time.total_seconds);
    }
  }
  std::printf(
      "{\"n\": %ld, \"m\": %ld, \"d\": %ld, \"dtype\": \"%s\", \"device\": \"%s\", \"precision\": \"%s\", "
      "\"iters\": %d, \"threads\": %d, \"repeats\": %d, "
      "\"gradient\": %s, \"native\": %s, \"core_median_s\": %.9g, \"slack_median_s\": %.9g, \"median_s\": %.9g, "
      "\"q1_s\": %.9g, \"q3_s\": %.9g, \"min_s\": %.9g, \"max_s\": %.9g, \"cost\": %.17g}\n",
      a.n, a.m, a.d, a.type.c_str(), a.cuda ? "cuda" : "cpu",
      a.precision.empty() ? (single ? "fp32" : "fp64") : a.precision.c_str(), a.iters, a.threads, a.repeats,
      a.gradient ? "true" : "false", kNative ? "true" : "false", quantile(core, 0.5), quantile(slack, 0.5),
      quantile(seconds, 0.5), quantile(seconds, 0.25), quantile(seconds, 0.75), quantile(seconds, 0.0),
      quantile(seconds, 1.0), sink / static_cast<double>(a.warmup + a.repeats));
  return 0;
}
