// Dense float64 linear algebra for the oracles: Gaussian elimination with partial pivoting.
// Small systems only (tests).
#pragma once

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <utility>
#include <vector>

namespace reference {

// Solves A x = rhs for a square (size, size) row-major A; throws on a (numerically) singular A.
inline std::vector<double> dense_solve(std::vector<double> a, std::vector<double> rhs) {
  const std::int64_t size = static_cast<std::int64_t>(rhs.size());
  for (std::int64_t col = 0; col < size; ++col) {
    std::int64_t pivot = col;
    for (std::int64_t r = col + 1; r < size; ++r) {
      if (std::abs(a[r * size + col]) > std::abs(a[pivot * size + col])) pivot = r;
    }
    if (!(std::abs(a[pivot * size + col]) > 0)) throw std::runtime_error("dense_solve: singular matrix");
    if (pivot != col) {
      for (std::int64_t c = 0; c < size; ++c) std::swap(a[col * size + c], a[pivot * size + c]);
      std::swap(rhs[col], rhs[pivot]);
    }
    for (std::int64_t r = col + 1; r < size; ++r) {
      const double factor = a[r * size + col] / a[col * size + col];
      for (std::int64_t c = col; c < size; ++c) a[r * size + c] -= factor * a[col * size + c];
      rhs[r] -= factor * rhs[col];
    }
  }
  std::vector<double> x(static_cast<std::size_t>(size));
  for (std::int64_t r = size - 1; r >= 0; --r) {
    double v = rhs[r];
    for (std::int64_t c = r + 1; c < size; ++c) v -= a[r * size + c] * x[c];
    x[r] = v / a[r * size + r];
  }
  return x;
}

}  // namespace reference
