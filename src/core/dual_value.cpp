#include "core/dual_value.hpp"

#include "math/dual_phi.hpp"

namespace flashsinkhorn::detail {

namespace {

double weighted_phi(const std::vector<double>& w, const std::vector<double>& potential, double eps,
                    const std::optional<double>& rho) {
  double total = 0;
  for (std::size_t i = 0; i < w.size(); ++i) total += w[i] * math::dual_phi(potential[i], eps, rho.value_or(0.0));
  return total;
}

}  // namespace

double dual_value(const dual_value_inputs& in) {
  double value = weighted_phi(*in.a, *in.f, in.eps, in.rho_x) + weighted_phi(*in.b, *in.g, in.eps, in.rho_y);
  if (in.f_aa != nullptr) {
    value -= weighted_phi(*in.a, *in.f_aa, in.eps, in.rho_x) + weighted_phi(*in.b, *in.g_bb, in.eps, in.rho_y);
  }
  return value;
}

}  // namespace flashsinkhorn::detail
