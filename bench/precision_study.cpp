// Error of each precision mode against float64, through the public solver, on the device the
// build and machine give (CUDA when present). Axes (declared): n = m = 4,000, d ∈ {8, 64},
// x, y ~ N(0, I_d), uniform weights, ε = r·(mean squared distance) for r ∈ {1, 1e-1, 1e-2, 1e-3},
// alternating solver with ε-scaling 0.5 then 50 iterations at ε (the same iterate count in every
// mode, so the difference is arithmetic, not convergence). Prints a table and one JSON line per
// case: relative error of the cost, and max |f − f₆₄| (gauge-aligned) relative to the cost scale.
//   flashsinkhorn_precision_study [--n N] [--device cpu|cuda]
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "flashsinkhorn/flashsinkhorn.hpp"

namespace fs = flashsinkhorn;

namespace {

std::vector<float> normal_cloud(std::int64_t count, std::int64_t dim, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> points(static_cast<std::size_t>(count * dim));
  for (float& v : points) v = normal(rng);
  return points;
}

double mean_squared_distance(const std::vector<float>& x, const std::vector<float>& y, std::int64_t dim) {
  // E‖x − y‖² = Σ_k Var(x_k) + Var(y_k) + (mean differences)²: exact from the sample moments.
  const std::int64_t n = static_cast<std::int64_t>(x.size()) / dim, m = static_cast<std::int64_t>(y.size()) / dim;
  double total = 0;
  for (std::int64_t k = 0; k < dim; ++k) {
    double mx = 0, my = 0, sx = 0, sy = 0;
    for (std::int64_t i = 0; i < n; ++i) mx += x[i * dim + k];
    for (std::int64_t j = 0; j < m; ++j) my += y[j * dim + k];
    mx /= static_cast<double>(n);
    my /= static_cast<double>(m);
    for (std::int64_t i = 0; i < n; ++i) sx += (x[i * dim + k] - mx) * (x[i * dim + k] - mx);
    for (std::int64_t j = 0; j < m; ++j) sy += (y[j * dim + k] - my) * (y[j * dim + k] - my);
    total += sx / static_cast<double>(n) + sy / static_cast<double>(m) + (mx - my) * (mx - my);
  }
  return total;
}

std::string name_of(fs::precision mode) { return std::string(fs::to_string(mode)); }

}  // namespace

int main(int argc, char** argv) {
  std::int64_t n = 4000;
  fs::device_kind device = fs::device_kind::automatic;
  for (int k = 1; k + 1 < argc; k += 2) {
    if (std::strcmp(argv[k], "--n") == 0) n = std::atol(argv[k + 1]);
    if (std::strcmp(argv[k], "--device") == 0) device = std::strcmp(argv[k + 1], "cpu") == 0 ? fs::device_kind::cpu : fs::device_kind::cuda;
  }
  // The GPU kernel variant under study (kernel_variant.hpp): FLASHSINKHORN_KERNEL, else the default.
  const char* requested = std::getenv("FLASHSINKHORN_KERNEL");
  const std::string variant = requested != nullptr && *requested != '\0' ? requested : "default";
  std::printf("# kernel variant: %s\n", variant.c_str());
  std::printf("%6s %5s %9s %6s %14s %14s %s\n", "d", "ratio", "eps", "mode", "rel cost err", "max f err/msd", "device");
  for (std::int64_t d : {8, 64}) {
    const std::vector<float> x = normal_cloud(n, d, 100 + static_cast<std::uint64_t>(d));
    const std::vector<float> y = normal_cloud(n, d, 200 + static_cast<std::uint64_t>(d));
    const double msd = mean_squared_distance(x, y, d);
    for (double ratio : {1.0, 1e-1, 1e-2, 1e-3}) {
      fs::problem p;
      p.x = fs::host_matrix(x.data(), n, d);
      p.y = fs::host_matrix(y.data(), n, d);
      p.eps = ratio * msd;
      fs::options o;
      o.device = device;
      o.scaling = 0.5;
      o.max_iterations = 50;
      o.tolerance = 0;
      o.precision = fs::precision::fp64;
      const fs::result exact = fs::solve(p, o);
      for (fs::precision mode : {fs::precision::fp32, fs::precision::tf32, fs::precision::bf16}) {
        o.precision = mode;
        const fs::result r = fs::solve(p, o);
        double shift = 0;
        for (std::int64_t i = 0; i < n; ++i) shift += (r.f[i] - exact.f[i]) / static_cast<double>(n);
        double f_err = 0;
        for (std::int64_t i = 0; i < n; ++i) f_err = std::max(f_err, std::abs(r.f[i] - shift - exact.f[i]));
        const double cost_err = std::abs(r.cost - exact.cost) / std::abs(exact.cost);
        std::printf("%6ld %5.0e %9.3g %6s %14.3e %14.3e %s\n", static_cast<long>(d), ratio, p.eps, name_of(mode).c_str(),
                    cost_err, f_err / msd, r.device.c_str());
        std::fprintf(stderr,
                     "{\"study\": \"precision\", \"n\": %ld, \"d\": %ld, \"eps_ratio\": %g, \"eps\": %.6g, \"mode\": \"%s\", "
                     "\"relative_cost_error\": %.6e, \"max_potential_error_over_msd\": %.6e, \"device\": \"%s\", "
                     "\"kernel_variant\": \"%s\"}\n",
                     static_cast<long>(n), static_cast<long>(d), ratio, p.eps, name_of(mode).c_str(), cost_err, f_err / msd,
                     r.device.c_str(), variant.c_str());
      }
    }
  }
  return 0;
}
