// Launch overhead of the solver loop's iteration blocks (backend::run_block, issue 3): the same
// alternating iterations at a fixed ε, with one convergence read (take_error) after every block
// of --block iterations — what the solver loop does — enqueued three ways:
//   steps    softmin called half-step by half-step on the backend's own stream (no run_block);
//   plain    run_block on cudaStreamLegacy, which cannot be captured: the recorded block runs
//            launch by launch (the recording costs included);
//   graphs   run_block on the backend's own stream: one CUDA graph launch per block (the first
//            block of the warm-up runs plain, the second is captured).
// Host wall clock per repeat of --iters iterations (the reads synchronise, so this is the loop's
// real time), median over --repeats after one warm-up repeat; x, y ~ N(0, I_d), uniform weights,
// ε = 0.1·d. Axes: (n = m, d) × precision, small n where launch overhead shows.
// Output: one JSON object per line on stdout (ms per iteration of each way, graphs' speed-up over
// steps); progress on stderr.
//
//   flashsinkhorn_block_bench [--sizes 1000x3,10000x64] [--precisions tf32] [--iters 100]
//                             [--block 10] [--repeats 7]
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/backend.hpp"
#include "core/prepare.hpp"
#include "core/prepared_cloud.hpp"
#include "cuda/cuda_backend.hpp"
#include "cuda/cuda_check.hpp"
#include "bench_args.hpp"
#include "bench_clouds.hpp"

namespace {

using flashsinkhorn::precision;
using namespace flashsinkhorn::detail;
using flashsinkhorn::bench::parse_precision;
using flashsinkhorn::bench::parse_run_args;
using flashsinkhorn::bench::run_args;
using flashsinkhorn::bench::size_case;
using flashsinkhorn::bench::cloud_weights;
using flashsinkhorn::bench::normal_cloud;

enum class way { steps, plain, graphs };

// One alternating iteration; the error on the last g-step of a block (as in the solver loop).
void iteration(backend& b, double eps, bool last) {
  b.softmin({side::x, side::y, slot::g, slot::f, slot::f, eps, 1, 1, false});
  b.softmin({side::y, side::x, slot::f, slot::g, slot::g, eps, 1, 1, last});
}

// `iterations` iterations in blocks of `block`, one read after each; returns the wall seconds.
double run(backend& b, way how, int iterations, int block, double eps) {
  const auto start = std::chrono::steady_clock::now();
  for (int k = 0; k < iterations; k += block) {
    const int count = std::min(block, iterations - k);
    if (how == way::steps) {
      for (int i = 0; i < count; ++i) iteration(b, eps, i + 1 == count);
    } else {
      b.run_block(count, [&](int i) { iteration(b, eps, i + 1 == count); });
    }
    (void)b.take_error();
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double median_ms_per_iteration(backend& b, way how, int iterations, int block, int repeats, double eps) {
  (void)run(b, how, iterations, block, eps);  // warm-up: kernels loaded, graphs captured
  std::vector<double> seconds;
  for (int r = 0; r < repeats; ++r) seconds.push_back(run(b, how, iterations, block, eps));
  std::sort(seconds.begin(), seconds.end());
  return 1e3 * seconds[seconds.size() / 2] / iterations;
}

}  // namespace

int main(int argc, char** argv) {
  run_args args{{{1000, 3}, {5000, 3}, {10000, 64}, {50000, 8}}, {"tf32"}, 100, 7};
  int block = 10;
  const auto block_flag = [&](const std::string& flag, const std::string& value) {
    if (flag != "--block") return false;
    block = std::stoi(value);
    return true;
  };
  if (!parse_run_args(argc, argv, args, block_flag)) return 2;
  const std::vector<size_case>& sizes = args.sizes;
  const std::vector<std::string>& precisions = args.precisions;
  const int iterations = args.iterations;
  const int repeats = args.repeats;
  if (iterations < 1 || block < 1 || repeats < 1) {
    std::fprintf(stderr, "--iters, --block and --repeats must be >= 1\n");
    return 2;
  }
  if (cuda_device_count() == 0) {
    std::fprintf(stderr, "no CUDA device\n");
    return 1;
  }
  const std::string device = cuda_device_name(0);
  std::mt19937_64 rng(20261201);
  for (const size_case& size : sizes) {
    prepared_problem problem;
    problem.x = normal_cloud(size.n, size.d, cloud_weights::uniform, rng);
    problem.y = normal_cloud(size.n, size.d, cloud_weights::uniform, rng);
    problem.cost_scale = 1;
    centre_clouds(problem);
    const double eps = 0.1 * static_cast<double>(size.d);
    for (const std::string& name : precisions) {
      const precision mode = parse_precision(name);
      double ms[3] = {0, 0, 0};
      cuda_block_statistics stats;
      for (way how : {way::steps, way::plain, way::graphs}) {
        auto b = how == way::plain ? make_cuda_backend(problem, mode, 0, cudaStreamLegacy)
                                   : make_cuda_backend(problem, mode, 0);
        ms[static_cast<int>(how)] = median_ms_per_iteration(*b, how, iterations, block, repeats, eps);
        if (how == way::graphs) stats = cuda_block_stats(*b);
      }
      std::printf(
          "{\"impl\":\"flashsinkhorn\",\"bench\":\"block_launch\",\"device\":\"%s\",\"n\":%lld,\"m\":%lld,"
          "\"d\":%lld,\"precision\":\"%s\",\"eps\":%g,\"iterations\":%d,\"block\":%d,\"repeats\":%d,"
          "\"ms_per_iteration_steps\":%.5f,\"ms_per_iteration_plain_blocks\":%.5f,"
          "\"ms_per_iteration_graphs\":%.5f,\"graph_speedup_vs_steps\":%.3f,\"graph_captures\":%d,"
          "\"graph_launches\":%d,\"graphs_unavailable\":\"%s\"}\n",
          device.c_str(), static_cast<long long>(size.n), static_cast<long long>(size.n),
          static_cast<long long>(size.d), name.c_str(), eps, iterations, block, repeats, ms[0], ms[1], ms[2],
          ms[0] / ms[2], stats.captures, stats.graph_launches, stats.graphs_unavailable.c_str());
      std::fflush(stdout);
      std::fprintf(stderr, "n=%lld d=%lld %s: steps %.4f, plain blocks %.4f, graphs %.4f ms/iter (x%.2f)\n",
                   static_cast<long long>(size.n), static_cast<long long>(size.d), name.c_str(), ms[0], ms[1],
                   ms[2], ms[0] / ms[2]);
    }
  }
  return 0;
}
