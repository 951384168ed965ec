// The inner solve of the sparse_plan preconditioner (cuda/sparse_schur.hpp) alone: the time of one
// iteration of its cooperative CG, which the HVP's CG pays ~800 times a product at d = 64, ε = 0.1
// (docs/cuda_backend.md, session 53). S_k is built from entries shaped like a near-matching plan:
// row i keeps a dominant key σ(i) (a random permutation) with share 1 − Σ of seven others, random
// keys with shares 10⁻²·2⁻ᵘ; the column sums carry 1 + 10⁻⁹ of the kept mass, so S_k is as
// ill-conditioned as the real one and the CG runs to its cap. Axes: n = m; the iteration cap.
// Per case: one warm-up solve, then --repeats solves timed with CUDA events; the median, the
// iterations the solve ran (read back from the device), and µs per iteration.
// Output: one JSON object per line on stdout.
//
//   flashsinkhorn_sparse_schur_bench [--ns 1000,10000,50000] [--iterations 200] [--repeats 5]
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "bench_args.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/plan_top_entries.hpp"
#include "cuda/sparse_schur.hpp"

namespace {

using flashsinkhorn::detail::device_buffer;
using flashsinkhorn::detail::kTopEntries;
using flashsinkhorn::detail::sparse_schur;
using flashsinkhorn::detail::sparse_schur_buffers;

template <class T>
device_buffer<T> upload(const std::vector<T>& host) {
  device_buffer<T> buffer(host.size(), nullptr);
  FS_CUDA_CHECK(cudaMemcpy(buffer.data(), host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
  return buffer;
}

struct near_matching_entries {
  std::vector<int> keys;
  std::vector<double> values, row_masses, column_sums;
};

near_matching_entries make_entries(std::int64_t n, std::mt19937_64& rng) {
  near_matching_entries e;
  const auto count = static_cast<std::size_t>(n);
  e.keys.resize(count * kTopEntries);
  e.values.resize(e.keys.size());
  e.row_masses.assign(count, 1.0 / static_cast<double>(n));
  e.column_sums.assign(count, 0.0);
  std::vector<int> partner(count);
  std::iota(partner.begin(), partner.end(), 0);
  std::shuffle(partner.begin(), partner.end(), rng);
  std::uniform_int_distribution<int> key(0, static_cast<int>(n) - 1);
  for (std::size_t i = 0; i < count; ++i) {
    double rest = 1;
    for (int u = 1; u < kTopEntries; ++u) {
      int j = key(rng);
      while (j == partner[i]) j = key(rng);
      e.keys[i * kTopEntries + u] = j;
      e.values[i * kTopEntries + u] = 1e-2 * std::ldexp(1.0, -u);
      rest -= e.values[i * kTopEntries + u];
    }
    e.keys[i * kTopEntries] = partner[i];
    e.values[i * kTopEntries] = rest;
    for (int u = 0; u < kTopEntries; ++u)
      e.column_sums[e.keys[i * kTopEntries + u]] += e.row_masses[i] * e.values[i * kTopEntries + u];
  }
  for (double& c : e.column_sums) c *= 1 + 1e-9;
  return e;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::int64_t> ns{1000, 10000, 50000};
  int cap = sparse_schur::kInnerIterations, repeats = 5;
  for (int a = 1; a + 1 < argc; a += 2) {
    const std::string flag = argv[a], value = argv[a + 1];
    if (flag == "--ns") {
      ns.clear();
      for (const auto& part : flashsinkhorn::bench::split(value, ',')) ns.push_back(std::stoll(part));
    } else if (flag == "--iterations") {
      cap = std::stoi(value);
    } else if (flag == "--repeats") {
      repeats = std::stoi(value);
    } else {
      std::fprintf(stderr, "unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  if (argc % 2 == 0 || cap < 1 || repeats < 1) {
    std::fprintf(stderr, "usage: %s [--ns 1000,10000] [--iterations 200] [--repeats 5]\n", argv[0]);
    return 2;
  }
  std::mt19937_64 rng(53);
  cudaStream_t stream = nullptr;
  FS_CUDA_CHECK(cudaStreamCreate(&stream));
  cudaEvent_t start = nullptr, stop = nullptr;
  FS_CUDA_CHECK(cudaEventCreate(&start));
  FS_CUDA_CHECK(cudaEventCreate(&stop));
  for (const std::int64_t n : ns) {
    const near_matching_entries e = make_entries(n, rng);
    const device_buffer<int> keys = upload(e.keys);
    const device_buffer<double> values = upload(e.values);
    std::normal_distribution<double> normal(0.0, 1.0);
    std::vector<double> rhs(static_cast<std::size_t>(n));
    for (double& v : rhs) v = normal(rng);
    const device_buffer<double> d_rhs = upload(rhs);
    device_buffer<double> solution(rhs.size(), nullptr);
    sparse_schur_buffers buffers;
    const sparse_schur s_k(buffers, keys.data(), values.data(), n, kTopEntries, e.row_masses, e.column_sums, 0.0, 0,
                           stream);
    std::vector<float> ms;
    for (int r = 0; r <= repeats; ++r) {
      FS_CUDA_CHECK(cudaEventRecord(start, stream));
      s_k.solve(d_rhs.data(), solution.data(), nullptr, stream, 1e-14, cap);
      FS_CUDA_CHECK(cudaEventRecord(stop, stream));
      FS_CUDA_CHECK(cudaEventSynchronize(stop));
      float elapsed = 0;
      FS_CUDA_CHECK(cudaEventElapsedTime(&elapsed, start, stop));
      if (r > 0) ms.push_back(elapsed);
    }
    std::sort(ms.begin(), ms.end());
    const double median = ms[ms.size() / 2];
    const int iterations = s_k.last_iterations(stream);
    std::printf(
        "{\"bench\": \"sparse_schur_solve\", \"n\": %lld, \"entries_per_row\": %d, \"cap\": %d, \"iterations\": %d, "
        "\"median_ms\": %.4f, \"us_per_iteration\": %.3f}\n",
        static_cast<long long>(n), kTopEntries, cap, iterations, median,
        iterations > 0 ? 1e3 * median / iterations : 0.0);
    std::fflush(stdout);
  }
  FS_CUDA_CHECK(cudaEventDestroy(start));
  FS_CUDA_CHECK(cudaEventDestroy(stop));
  FS_CUDA_CHECK(cudaStreamDestroy(stream));
  return 0;
}
