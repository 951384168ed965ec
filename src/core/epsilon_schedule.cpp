#include "core/epsilon_schedule.hpp"

#include <cmath>

namespace flashsinkhorn::detail {

std::vector<double> epsilon_schedule(double diameter, double eps, double scaling) {
  const double blur = std::sqrt(eps);
  if (!(diameter > 0)) return {eps, eps};
  std::vector<double> schedule{diameter * diameter};
  // numpy.arange(start, stop, step) has ceil((stop − start)/step) elements start + k·step.
  const double start = 2 * std::log(diameter);
  const double stop = 2 * std::log(blur);
  const double step = 2 * std::log(scaling);
  const auto count = static_cast<long>(std::ceil((stop - start) / step));
  for (long k = 0; k < count; ++k)  // count ≤ 0 when diam ≤ blur: no middle terms
    schedule.push_back(std::exp(start + static_cast<double>(k) * step));
  schedule.push_back(blur * blur);
  return schedule;
}

}  // namespace flashsinkhorn::detail
