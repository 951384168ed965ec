// The CPU's measured FMA ceiling: the roofline the CPU backend's dot products are held against
// (its micro-kernel, src/cpu/score_tile.hpp, is FMA-bound at large d). Twelve independent
// accumulator vectors (enough to cover the FMA latency on current x86 cores), one per thread or
// one set per OpenMP thread, the same GCC vector extensions as the backend; flops = 2 per lane.
// Prints one JSON line per (precision, threads):
//   flashsinkhorn_cpu_fma_peak [--seconds 1.0]
#include <omp.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "cpu/score_tile.hpp"

namespace {

template <class T>
double fma_rate(double seconds, int threads) {
  using vec = typename flashsinkhorn::detail::simd<T>::vec;
  constexpr int kAccumulators = 12;
  constexpr long kBatch = 1 << 20;
  double flops = 0;
  const auto start = std::chrono::steady_clock::now();
#pragma omp parallel num_threads(threads) reduction(+ : flops)
  {
    vec acc[kAccumulators];
    for (int i = 0; i < kAccumulators; ++i) acc[i] = vec{} + static_cast<T>(i) * T(1e-7);
    vec a = vec{} + T(0.999999), b = vec{} + T(1e-7);
    long batches = 0;
    while (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < seconds) {
      for (long it = 0; it < kBatch; ++it) {
#pragma GCC unroll 12
        for (int i = 0; i < kAccumulators; ++i) acc[i] = acc[i] * a + b;
        asm volatile("" : "+x"(a));  // keeps the loop from being folded
      }
      ++batches;
    }
    T sink = 0;
    for (int i = 0; i < kAccumulators; ++i) sink += acc[i][0];
    if (sink == T(-1)) std::puts("");  // never: keeps the accumulators live
    flops = static_cast<double>(batches) * kBatch * kAccumulators * 2 * flashsinkhorn::detail::simd<T>::kLanes;
  }
  return flops / std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 1.0;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--seconds") == 0) {
      seconds = std::atof(argv[i + 1]);
    } else {
      std::fprintf(stderr, "usage: %s [--seconds S]\n", argv[0]);
      return 2;
    }
  }
  if (!(seconds > 0)) {
    std::fprintf(stderr, "--seconds must be > 0\n");
    return 2;
  }
  const int all = omp_get_max_threads();
  for (const char* precision : {"fp32", "fp64"}) {
    for (int threads : {1, all}) {
      const bool single = std::strcmp(precision, "fp32") == 0;
      const double rate = single ? fma_rate<float>(seconds, threads) : fma_rate<double>(seconds, threads);
      std::printf("{\"bench\": \"cpu_fma_peak\", \"precision\": \"%s\", \"threads\": %d, \"gflops\": %.2f}\n", precision,
                  threads, rate / 1e9);
      if (threads == all) break;  // one thread only: the two rows would be the same
    }
  }
  return 0;
}
