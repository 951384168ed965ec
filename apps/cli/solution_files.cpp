#include "solution_files.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

#include "npy.hpp"

namespace flashsinkhorn::cli {
namespace {

void require_finite(const std::vector<double>& values, const std::string& what) {
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (!std::isfinite(values[i])) {
      throw std::runtime_error(what + " is not finite at index " + std::to_string(i) +
                               "; try a larger --eps or --precision fp64");
    }
  }
}

void stage(atomic_output& output, const std::string& file_name, const std::vector<double>& values,
           const std::vector<std::int64_t>& shape, dtype stored_as) {
  require_finite(values, file_name);
  output.add(file_name, encode_npy(values, shape, stored_as));
}

}  // namespace

void stage_solution_files(const solver& solved, const result& r, std::int64_t dims, dtype stored_as,
                          atomic_output& output) {
  const auto n = static_cast<std::int64_t>(r.f.size());
  const auto m = static_cast<std::int64_t>(r.g.size());
  stage(output, "f.npy", r.f, {n}, stored_as);
  stage(output, "g.npy", r.g, {m}, stored_as);

  // The library writes the projection in float64; the file gets `stored_as`.
  std::vector<double> transport(static_cast<std::size_t>(n * dims));
  solved.barycentric_projection(host_matrix(transport.data(), n, dims));
  stage(output, "transport_x.npy", transport, {n, dims}, stored_as);
}

void stage_gradient_files(const solver& solved, const options& o, std::int64_t n, std::int64_t m, std::int64_t dims,
                          dtype stored_as, atomic_output& output) {
  std::vector<double> grad_x(static_cast<std::size_t>(n * dims));
  solved.gradient_x(host_matrix(grad_x.data(), n, dims));
  stage(output, "grad_x.npy", grad_x, {n, dims}, stored_as);
  std::vector<double> grad_y(static_cast<std::size_t>(m * dims));
  solved.gradient_y(host_matrix(grad_y.data(), m, dims));
  stage(output, "grad_y.npy", grad_y, {m, dims}, stored_as);

  if (!o.reach_x) {
    std::vector<double> grad_a(static_cast<std::size_t>(n));
    solved.gradient_a(host_vector(grad_a.data(), n));
    stage(output, "grad_a.npy", grad_a, {n}, stored_as);
  }
  if (!o.reach_y) {
    std::vector<double> grad_b(static_cast<std::size_t>(m));
    solved.gradient_b(host_vector(grad_b.data(), m));
    stage(output, "grad_b.npy", grad_b, {m}, stored_as);
  }
}

}  // namespace flashsinkhorn::cli
