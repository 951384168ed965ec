// GPU forward benchmark: the authors' protocol (SPEC §5) on the CUDA backend.
//   x, y ~ N(0, I_d), weights U[0,1) + 0.1 normalised, ε = 0.1, s = 1, fixed 10 alternating
//   iterations (f ← T_f(g), g ← T_g(f)), potentials from 0; CUDA-event median over repeats after a
//   warm-up, on freshly generated data per size.
// Axes: (n = m, d) × precision. Derived: ms per iteration, TFLOP/s (4·n·m·d per iteration), and the
// fraction of the roofline floor max(4nmd / tensor peak, 2nm / MUFU ex2 rate) (SPEC §6 ceilings:
// TF32 394e12, BF16 769e12 FLOP/s, ex2 4.1e12/s; fp32 = 3×TF32 counts 3× the TF32 FLOP).
// Memory: device bytes held by the backend (the peak of the library's device pool over construction
// and the warm-up solve).
// Output: one JSON object per line on stdout; progress on stderr.
//
//   flashsinkhorn_gpu_bench [--sizes 10000x64,50000x8] [--precisions tf32,bf16,fp32] [--iters 10]
//                           [--repeats 7]
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/backend.hpp"
#include "core/prepare.hpp"
#include "core/prepared_cloud.hpp"
#include "cuda/cuda_backend.hpp"
#include "cuda/cuda_check.hpp"
#include "alternating_steps.hpp"
#include "bench_args.hpp"
#include "bench_clouds.hpp"
#include "cuda/kernel_variant.hpp"
#include "cuda/softmin_launch.hpp"
#include "flashsinkhorn/solver.hpp"

namespace {

using flashsinkhorn::precision;
using namespace flashsinkhorn::detail;
using flashsinkhorn::bench::parse_precision;
using flashsinkhorn::bench::parse_run_args;
using flashsinkhorn::bench::run_args;
using flashsinkhorn::bench::size_case;
using flashsinkhorn::bench::cloud_weights;
using flashsinkhorn::bench::normal_cloud;

void forward(backend& b, int iterations, double eps) {
  for (int it = 0; it < iterations; ++it) {
    b.softmin(flashsinkhorn::bench::f_update(eps));
    b.softmin(flashsinkhorn::bench::g_update(eps));
  }
}

}  // namespace

int main(int argc, char** argv) {
  run_args args{{{10000, 64}, {50000, 8}, {50000, 64}, {50000, 512}, {200000, 64}}, {"tf32", "bf16", "fp32"}, 10, 7};
  if (!parse_run_args(argc, argv, args, [](const std::string&, const std::string&) { return false; })) return 2;
  const std::vector<size_case>& sizes = args.sizes;
  const std::vector<std::string>& precisions = args.precisions;
  const int iterations = args.iterations;
  const int repeats = args.repeats;
  const double eps = 0.1;
  if (cuda_device_count() == 0) {
    std::fprintf(stderr, "no CUDA device\n");
    return 1;
  }
  const std::string device = cuda_device_name(0);
  // The backends run on this stream and the events are recorded on it (a backend's own stream is
  // non-blocking: events on the legacy default stream would not wait for its work).
  cudaStream_t stream = nullptr;
  FS_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  std::mt19937_64 rng(20261130);
  for (const size_case& size : sizes) {
    prepared_problem problem;
    problem.x = normal_cloud(size.n, size.d, cloud_weights::protocol, rng);
    problem.y = normal_cloud(size.n, size.d, cloud_weights::protocol, rng);
    problem.cost_scale = 1;
    centre_clouds(problem);
    const double n = static_cast<double>(size.n);
    const double d = static_cast<double>(size.d);
    for (const std::string& name : precisions) {
      const precision mode = parse_precision(name);
      // The backend's device memory: the peak of the library's pool over construction and a solve
      // (the pool keeps what earlier backends freed, so the driver's free memory would read 0 here).
      FS_CUDA_CHECK(cudaDeviceSynchronize());
      flashsinkhorn::reset_peak_device_memory(0);
      const std::size_t in_use_before = flashsinkhorn::device_memory(0).in_use;
      auto b = make_cuda_backend(problem, mode, 0, stream);
      forward(*b, iterations, eps);  // warm-up (also first-touch of every buffer)
      FS_CUDA_CHECK(cudaDeviceSynchronize());
      const std::size_t device_bytes = flashsinkhorn::device_memory(0).peak_in_use - in_use_before;
      cudaEvent_t start, stop;
      FS_CUDA_CHECK(cudaEventCreate(&start));
      FS_CUDA_CHECK(cudaEventCreate(&stop));
      std::vector<double> ms;
      for (int r = 0; r < repeats; ++r) {
        FS_CUDA_CHECK(cudaEventRecord(start, stream));
        forward(*b, iterations, eps);
        FS_CUDA_CHECK(cudaEventRecord(stop, stream));
        FS_CUDA_CHECK(cudaEventSynchronize(stop));
        float elapsed = 0;
        FS_CUDA_CHECK(cudaEventElapsedTime(&elapsed, start, stop));
        ms.push_back(elapsed);
      }
      FS_CUDA_CHECK(cudaEventDestroy(start));
      FS_CUDA_CHECK(cudaEventDestroy(stop));
      std::sort(ms.begin(), ms.end());
      const double median_ms = ms[ms.size() / 2];
      const double per_iter_ms = median_ms / iterations;
      const double flop = 4 * n * n * d;  // per iteration, both half-steps
      const double tensor_peak = mode == precision::bf16 ? 769e12 : 394e12;
      const double tensor_flop = mode == precision::fp32 ? 3 * flop : flop;
      const double floor_ms = 1e3 * std::max(tensor_flop / tensor_peak, 2 * n * n / 4.1e12);
      // sanity: the potentials are finite
      const std::vector<double> f = b->read_potential(slot::f);
      bool finite = true;
      for (double v : f) finite = finite && std::isfinite(v);
      int max_shared = 0;
      FS_CUDA_CHECK(cudaDeviceGetAttribute(&max_shared, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0));
      int sm_count = 0;
      FS_CUDA_CHECK(cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, 0));
      const char* kernel = softmin_kernel_name(mode, size.d, size.n, size.n, sm_count, max_shared);
      // The fp32 narrow kernel's row references and their margin (kernel_variant.hpp), so A/B rows tell
      // themselves apart.
      const char* reference = to_string(narrow_reference_choice());
      const char* exp2 = exp2_name(exp2_split_choice());  // where the wgmma tiles' 2^x run
      const char* forced = std::getenv("FLASHSINKHORN_KERNEL");  // a variant forced for every precision
      // The key splits of each half-step (n = m) and the streamed kernels' L2 budget that helped pick them.
      const int splits = softmin_key_splits(mode, size.d, size.n, size.n, sm_count, max_shared);
      const long long l2_mib = static_cast<long long>(streamed_l2_budget_choice() >> 20);
      const bool key_pairs = softmin_key_pairs(mode, size.d, size.n, size.n, sm_count, max_shared);  // clusters of two
      const bool query_pairs = key_pairs && streamed_query_pairs_choice();  // the leftover row block's splits
      std::printf(
          "{\"impl\":\"flashsinkhorn\",\"kernel\":\"%s\",\"device\":\"%s\",\"n\":%lld,\"m\":%lld,\"d\":%lld,\"precision\":\"%s\","
          "\"eps\":%g,\"iterations\":%d,\"repeats\":%d,\"ms_per_iteration\":%.5f,\"ms_min_per_iteration\":%.5f,"
          "\"tflops\":%.2f,\"roofline_floor_ms\":%.5f,\"roofline_fraction\":%.3f,\"device_bytes\":%zu,"
          "\"finite\":%s,\"narrow_reference\":\"%s\",\"narrow_margin\":%g,\"exp2\":\"%s\",\"forced_kernel\":\"%s\","
          "\"key_splits\":%d,\"streamed_l2_mib\":%lld,\"key_pairs\":%s,\"query_pairs\":%s}\n",
          kernel, device.c_str(), static_cast<long long>(size.n), static_cast<long long>(size.n),
          static_cast<long long>(size.d), name.c_str(), eps, iterations, repeats, per_iter_ms,
          ms.front() / iterations, flop / (per_iter_ms * 1e-3) / 1e12, floor_ms, floor_ms / per_iter_ms,
          device_bytes, finite ? "true" : "false", reference, static_cast<double>(narrow_margin_choice()), exp2,
          forced == nullptr ? "" : forced, splits, l2_mib, key_pairs ? "true" : "false",
          query_pairs ? "true" : "false");
      std::fflush(stdout);
      std::fprintf(stderr, "n=%lld d=%lld %s [%s, %d split%s]: %.4f ms/iter (floor %.4f, %.0f%%)\n",
                   static_cast<long long>(size.n), static_cast<long long>(size.d), name.c_str(), kernel, splits,
                   splits == 1 ? "" : "s", per_iter_ms, floor_ms, 100 * floor_ms / per_iter_ms);
    }
  }
  FS_CUDA_CHECK(cudaStreamDestroy(stream));
  return 0;
}
