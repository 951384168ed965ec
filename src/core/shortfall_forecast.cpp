#include "core/shortfall_forecast.hpp"

#include <cstdint>
#include <cstdlib>
#include <vector>

#include "core/named_setting.hpp"

namespace flashsinkhorn::detail {

bool shortfall_forecast_enabled() {
  static constexpr named_choice<bool> kChoices[] = {{"on", true}, {"off", false}};
  return parse_named_setting(std::getenv("FLASHSINKHORN_SHORTFALL_FORECAST"), "FLASHSINKHORN_SHORTFALL_FORECAST",
                             kChoices, true);
}

double single_match_share(const backend& float64_compute, const prepared_problem& problem, double eps) {
  const std::int64_t n = problem.x.count, m = problem.y.count;
  if (n == 0) return 0.0;
  const std::vector<double> g = float64_compute.read_potential(slot::g);
  // A zero-weight key has s_ij = 0: its value must be finite (0·(−∞) would be NaN).
  std::vector<double> key_terms(static_cast<std::size_t>(m), 0.0);
  for (std::int64_t j = 0; j < m; ++j)
    if (problem.y.weights[j] > 0) key_terms[j] = g[j] / eps + problem.y.log_weights[j];
  const plan_rows_result pass =
      float64_compute.plan_rows(plan_pass_request(side::x, slot::g, eps, key_terms.data(), 1, true));
  std::int64_t single = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    const double entropy = pass.lse[i] - (pass.weighted[i] - pass.cost[i] / eps);
    if (entropy < kSingleMatchEntropy) ++single;
  }
  return static_cast<double>(single) / static_cast<double>(n);
}

}  // namespace flashsinkhorn::detail
