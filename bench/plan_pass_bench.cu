// GPU plan-pass benchmark (issue 4): the pass after a solve that touches P, against one forward
// half-step of the same problem. Protocol of gpu_forward_bench.cu (x, y ~ N(0, I_d), protocol
// weights, ε = 0.1, 10 alternating iterations first); then, medians over repeats:
//   half_step_ms  one softmin half-step (CUDA events)
//   plan_ms       backend plan_rows with k value columns (V: (m, k) float64 on the host, so the
//                 time includes its upload and the download of the (n, k) result: what
//                 solver::apply_plan and gradient_x pay today), wall clock
//   gradient_ms   backend point_gradient (∇X: the pass P̃·Y with the keys' points already on the
//                 device, and the epilogue; the result stays on the device), CUDA events — the
//                 cost of solver::gradient_x into a CUDA view
//   forward_gradient_ms  10 plain alternating iterations and then point_gradient, CUDA events:
//                 the protocol of the flash-sinkhorn forward + backward peer
//                 (bench/peers/flash_sinkhorn_forward.py --grad)
// k = d is the gradient's product (P̃·Y). Output: one JSON object per line on stdout.
//
//   flashsinkhorn_plan_bench [--sizes 10000x64,50000x64,50000x512] [--precisions tf32,bf16,fp32] [--repeats 5]
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "alternating_steps.hpp"
#include "bench_args.hpp"
#include "bench_clouds.hpp"
#include "core/backend.hpp"
#include "core/prepare.hpp"
#include "cuda/cuda_backend.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/kernel_variant.hpp"

namespace {

using flashsinkhorn::precision;
using namespace flashsinkhorn::detail;
using flashsinkhorn::bench::cloud_weights;
using flashsinkhorn::bench::normal_cloud;
using flashsinkhorn::bench::parse_precision;
using flashsinkhorn::bench::parse_run_args;
using flashsinkhorn::bench::run_args;
using flashsinkhorn::bench::size_case;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  run_args args{{{10000, 64}, {50000, 64}, {50000, 512}}, {"tf32", "bf16", "fp32"}, 10, 5};
  if (!parse_run_args(argc, argv, args, [](const std::string&, const std::string&) { return false; })) return 2;
  if (cuda_device_count() == 0) {
    std::fprintf(stderr, "no CUDA device\n");
    return 1;
  }
  const double eps = 0.1;
  const std::string device = cuda_device_name(0);
  cudaStream_t stream = nullptr;
  FS_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  std::mt19937_64 rng(20261130);
  for (const size_case& size : args.sizes) {
    prepared_problem problem;
    problem.x = normal_cloud(size.n, size.d, cloud_weights::protocol, rng);
    problem.y = normal_cloud(size.n, size.d, cloud_weights::protocol, rng);
    problem.cost_scale = 1;
    centre_clouds(problem);
    const std::vector<double>& values = problem.y.points;  // (m, d): the gradient's product
    for (const std::string& name : args.precisions) {
      const precision mode = parse_precision(name);
      auto b = make_cuda_backend(problem, mode, 0, stream);
      const softmin_step f_step = flashsinkhorn::bench::f_update(eps);
      const softmin_step g_step = flashsinkhorn::bench::g_update(eps);
      for (int it = 0; it < args.iterations; ++it) {
        b->softmin(f_step);
        b->softmin(g_step);
      }
      const plan_rows_request request{side::x, side::y, slot::g, eps, values.data(), size.d, false};
      (void)b->plan_rows(request);  // warm-up
      cudaEvent_t start, stop;
      FS_CUDA_CHECK(cudaEventCreate(&start));
      FS_CUDA_CHECK(cudaEventCreate(&stop));
      const point_gradient_request gradient{side::x, side::y, slot::g, slot::f, eps, false, 2.0, false};
      b->point_gradient(gradient);  // warm-up (stages the keys' Vᵀ once)
      auto event_ms = [&](const std::function<void()>& work) {
        FS_CUDA_CHECK(cudaEventRecord(start, stream));
        work();
        FS_CUDA_CHECK(cudaEventRecord(stop, stream));
        FS_CUDA_CHECK(cudaEventSynchronize(stop));
        float elapsed = 0;
        FS_CUDA_CHECK(cudaEventElapsedTime(&elapsed, start, stop));
        return static_cast<double>(elapsed);
      };
      std::vector<double> half_step_ms, plan_ms, gradient_ms, forward_gradient_ms;
      for (int r = 0; r < args.repeats; ++r) {
        FS_CUDA_CHECK(cudaEventRecord(start, stream));
        b->softmin(f_step);
        FS_CUDA_CHECK(cudaEventRecord(stop, stream));
        FS_CUDA_CHECK(cudaEventSynchronize(stop));
        float elapsed = 0;
        FS_CUDA_CHECK(cudaEventElapsedTime(&elapsed, start, stop));
        half_step_ms.push_back(elapsed);
        const auto t0 = std::chrono::steady_clock::now();
        const plan_rows_result result = b->plan_rows(request);
        plan_ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
        if (result.weighted.size() != static_cast<std::size_t>(size.n * size.d)) return 3;
        gradient_ms.push_back(event_ms([&] { b->point_gradient(gradient); }));
        forward_gradient_ms.push_back(event_ms([&] {
          for (int it = 0; it < args.iterations; ++it) {
            b->softmin(f_step);
            b->softmin(g_step);
          }
          b->point_gradient(gradient);
        }));
      }
      std::vector<double> grad(static_cast<std::size_t>(size.n * size.d));
      b->read_point_gradient(side::x, flashsinkhorn::host_matrix(grad.data(), size.n, size.d));
      double grad_norm = 0;
      for (double v : grad) grad_norm += v * v;
      if (!std::isfinite(grad_norm) || grad_norm == 0) return 4;
      FS_CUDA_CHECK(cudaEventDestroy(start));
      FS_CUDA_CHECK(cudaEventDestroy(stop));
      const double half = median(half_step_ms), plan = median(plan_ms);
      const double grad_pass = median(gradient_ms), forward_grad = median(forward_gradient_ms);
      std::printf(
          "{\"impl\":\"flashsinkhorn\",\"bench\":\"plan_pass\",\"device\":\"%s\",\"n\":%lld,\"m\":%lld,\"d\":%lld,"
          "\"k\":%lld,\"precision\":\"%s\",\"eps\":%g,\"repeats\":%d,\"half_step_ms\":%.5f,\"plan_ms\":%.5f,"
          "\"plan_over_iteration\":%.3f,\"plan_over_half_step\":%.3f,\"gradient_ms\":%.5f,"
          "\"gradient_over_iteration\":%.3f,\"gradient_over_half_step\":%.3f,\"iterations\":%d,"
          "\"forward_gradient_ms\":%.5f,\"gradient_norm\":%.6g,\"plan_cluster_pairs\":\"%s\"}\n",
          device.c_str(), static_cast<long long>(size.n), static_cast<long long>(size.n),
          static_cast<long long>(size.d), static_cast<long long>(size.d), name.c_str(), eps, args.repeats, half, plan,
          plan / (2 * half), plan / half, grad_pass, grad_pass / (2 * half), grad_pass / half, args.iterations,
          forward_grad, std::sqrt(grad_norm), to_string(plan_cluster_pairs_choice(mode)));
      std::fflush(stdout);
      std::fprintf(stderr,
                   "plan n=%lld d=k=%lld %s: host-values plan_rows %.3f ms, gradient pass %.3f ms = %.2f iterations "
                   "(half-step %.3f ms); %d iterations + gradient %.3f ms\n",
                   static_cast<long long>(size.n), static_cast<long long>(size.d), name.c_str(), plan, grad_pass,
                   grad_pass / (2 * half), half, args.iterations, forward_grad);
    }
  }
  FS_CUDA_CHECK(cudaStreamDestroy(stream));
  return 0;
}
