#include "core/relaxation_control.hpp"

#include <algorithm>
#include <cmath>

namespace flashsinkhorn::detail {
namespace {

// Steps of the grid of 2 − ω per halving (relaxation_control.hpp).
constexpr double kGridStepsPerHalving = 8;

// ω* rounded to the grid 2 − ω = 2^(−k/8), never below 1.
double on_grid(double omega) {
  const double k = std::round(-std::log2(2 - omega) * kGridStepsPerHalving);
  return std::max(1.0, 2 - std::exp2(-k / kGridStepsPerHalving));
}

}  // namespace

void relaxation_control::observe(double error, int iterations) {
  // NaN compares false: a NaN error acts as a rise.
  const bool rose = !(error <= (1 + kErrorRiseMargin) * smallest_);
  if (omega_ != 1 && rose) {
    omega_ = adaptive_ ? on_grid(1 + (omega_ - 1) / 2) : 1.0;
    fell_back_ = true;
  } else if (adaptive_) {
    adapt(error, iterations);
  }
  smallest_ = std::min(smallest_, error);
  previous_ = error;
}

void relaxation_control::adapt(double error, int iterations) {
  if (!(error > 0 && std::isfinite(previous_) && error < previous_ && iterations > 0)) return;  // no rate
  const double r = std::pow(error / previous_, 1.0 / iterations);
  const double w = omega_;
  const double theta = std::clamp((r + w - 1) * (r + w - 1) / (r * w * w), 0.0, 1.0);
  const double optimum = 2 / (1 + std::sqrt(1 - theta));
  omega_ = on_grid(std::min(optimum, kMaxAdaptive));
}

}  // namespace flashsinkhorn::detail
