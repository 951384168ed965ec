// The C++ side of the Python call-overhead benchmark (issue 6: "a Python call at n = m = 1,000
// within 20 µs of the C++ call"). Times `flashsinkhorn::solver(p, o).solve()` — construction
// (validation, centring, conversion) plus the loop, exactly what one `flashsinkhorn.sinkhorn()`
// call does — on the points bench/python_call_overhead.py hands over in a raw file, so both sides
// solve the same problem. Prints one JSON line: median, quartiles, min, max of the wall time.
//   flashsinkhorn_call_overhead --data FILE --n N --m M --d D --dtype float32|float64
//                               [--eps E] [--iters 10] [--threads 1] [--repeats 2000] [--warmup 50]
//                               [--gradient 0|1]
// --gradient 1 also times gradient_x(out) after the solve (what SamplesLoss forward+backward does).
// `slack` is wall time minus the result's own total_seconds (the solver's internal clock), per call:
// the part of the call the library does not time itself; the Python benchmark subtracts the same
// quantity measured around the Python call, which cancels the (noisy) solve time.
// FILE: x (n×d, row-major) then y (m×d), in --dtype. Options: alternating, tol = 0, fixed iterations,
// precision following the dtype (fp32 / fp64), CPU device, weights uniform.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "flashsinkhorn/flashsinkhorn.hpp"

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
  const fs::dtype type = single ? fs::dtype::float32 : fs::dtype::float64;
  fs::problem p;
  p.x = fs::matrix_view{bytes.data(), a.n, a.d, a.d, type};
  p.y = fs::matrix_view{bytes.data() + static_cast<std::size_t>(a.n * a.d) * item, a.m, a.d, a.d, type};
  p.eps = a.eps;
  fs::options o;
  o.solver = fs::solver_kind::alternating;
  o.precision = single ? fs::precision::fp32 : fs::precision::fp64;
  o.device = fs::device_kind::cpu;
  o.max_iterations = a.iters;
  o.tolerance = 0;
  o.cpu_threads = a.threads;

  double sink = 0;  // keeps the result observable
  std::vector<char> gradient(static_cast<std::size_t>(a.n * a.d) * item);
  const fs::mutable_matrix_view gradient_out{gradient.data(), a.n, a.d, a.d, type};
  std::vector<double> seconds, slack, core;
  seconds.reserve(static_cast<std::size_t>(a.repeats));
  slack.reserve(static_cast<std::size_t>(a.repeats));
  core.reserve(static_cast<std::size_t>(a.repeats));
  for (int r = 0; r < a.warmup + a.repeats; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    fs::solver s(p, o);
    const fs::result res = s.solve();
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
      "{\"n\": %ld, \"m\": %ld, \"d\": %ld, \"dtype\": \"%s\", \"iters\": %d, \"threads\": %d, \"repeats\": %d, "
      "\"gradient\": %s, \"native\": %s, \"core_median_s\": %.9g, \"slack_median_s\": %.9g, \"median_s\": %.9g, "
      "\"q1_s\": %.9g, \"q3_s\": %.9g, \"min_s\": %.9g, \"max_s\": %.9g, \"cost\": %.17g}\n",
      a.n, a.m, a.d, a.type.c_str(), a.iters, a.threads, a.repeats, a.gradient ? "true" : "false",
      kNative ? "true" : "false", quantile(core, 0.5), quantile(slack, 0.5), quantile(seconds, 0.5),
      quantile(seconds, 0.25), quantile(seconds, 0.75), quantile(seconds, 0.0), quantile(seconds, 1.0),
      sink / static_cast<double>(a.warmup + a.repeats));
  return 0;
}
