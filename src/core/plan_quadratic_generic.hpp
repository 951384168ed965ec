// The O(d²)-value fallback of backend::plan_quadratic_rows, through one ordinary plan pass:
//   Σ_j softmax_ij (u_i·z_j) V_j = Σ_c u_ic · [Σ_j softmax_ij (z_jc V_j)],
// i.e. plan_rows with the k·dim values W_j = z_j ⊗ V_j (W_j[c·k + l] = z_jc·V_jl), contracted with
// u_i on the host. z = request.key_directions when given, else the keys' points q. Memory
// O((keys + rows)·k·dim) — for V = the key points, k·dim = d², which is what the fused two-GEMM
// pass avoids. Both backends fuse the product; this pass stays as the reference the fused ones are
// tested and measured against (two_gemm_path::plan_pass), and serves key_directions on a backend
// that does not fuse them (backend::supports_key_directions).
// `key_points`: (keys count, dim) float64, the keys' points in their role (η⊙q); these are the
// exact prepared values, so in the single-precision modes q differs from a fused pass's operands
// by their rounding (both are within the mode's error budget).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/backend.hpp"
#include "flashsinkhorn/error.hpp"

namespace flashsinkhorn::detail {

// The host memory this fallback may take ((keys + rows)·k·dim float64 values) before it refuses:
// at d = 784 and m = 60,000 it would need 295 GB; a clear error beats std::bad_alloc.
inline constexpr double kGenericQuadraticMaxBytes = 4.0 * (1ull << 30);

inline plan_rows_result plan_quadratic_rows_by_plan_pass(const backend& compute, const plan_quadratic_request& request,
                                                         const std::vector<double>& key_points, std::int64_t dim,
                                                         std::int64_t row_count) {
  if (request.directions == nullptr || request.values == nullptr || request.k < 1)
    throw invalid_argument("plan_quadratic_rows: needs directions, values and k ≥ 1");
  const std::int64_t k = request.k;
  const auto key_count = static_cast<std::int64_t>(key_points.size()) / dim;
  const std::int64_t width = dim * k;
  const double bytes = 8.0 * static_cast<double>(key_count + row_count) * static_cast<double>(width);
  if (bytes > kGenericQuadraticMaxBytes) {
    std::string message = "plan_quadratic_rows: the generic pass would hold ";
    message.append(std::to_string(static_cast<long long>(bytes / (1 << 20)))).append(" MiB of k·d = ");
    message.append(std::to_string(width)).append(" values per point (limit 4 GiB); use the fused pass ");
    message.append("(two_gemm_path::fused, the default) or a smaller d");
    throw unsupported(message);
  }
  const double* z = request.key_directions != nullptr ? request.key_directions : key_points.data();  // (keys, dim)
  std::vector<double> outer(static_cast<std::size_t>(key_count * width));
  for (std::int64_t j = 0; j < key_count; ++j) {
    for (std::int64_t c = 0; c < dim; ++c) {
      const double z_jc = z[j * dim + c];
      for (std::int64_t l = 0; l < k; ++l) outer[j * width + c * k + l] = z_jc * request.values[j * k + l];
    }
  }
  plan_rows_request pass;
  pass.rows = request.rows;
  pass.keys = request.keys;
  pass.key_potential = request.key_potential;
  pass.eps = request.eps;
  pass.values = outer.data();
  pass.k = width;
  plan_rows_result averaged = compute.plan_rows(pass);
  plan_rows_result out;
  out.lse = std::move(averaged.lse);
  out.weighted.assign(static_cast<std::size_t>(row_count * k), 0.0);
  for (std::int64_t i = 0; i < row_count; ++i) {
    const double* u = request.directions + i * dim;
    const double* w = averaged.weighted.data() + i * width;
    for (std::int64_t c = 0; c < dim; ++c) {
      for (std::int64_t l = 0; l < k; ++l) out.weighted[i * k + l] += u[c] * w[c * k + l];
    }
  }
  return out;
}

}  // namespace flashsinkhorn::detail
