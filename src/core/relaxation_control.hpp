// The over-relaxation ω of the alternating loop at the target ε, decided check by check
// (solver_loop.hpp; options::relaxation, options::adaptive_relaxation).
//
// fixed (the default): ω = options::relaxation until a check's marginal error exceeds the smallest
//   earlier one by more than kErrorRiseMargin; then ω = 1 for the rest of the solve.
// adaptive: after each check whose error fell, the plain loop's local rate θ per iteration is read
//   off the observed one r = (e_k / e_{k−1})^{1/iterations} through the SOR relation of the
//   linearised iteration (Young; for Sinkhorn Lehmann, von Renesse, Sambale, Uschmajew 2021):
//       (r + ω − 1)² = r·ω²·θ      ⇒      θ = (r + ω − 1)² / (r·ω²),
//   and ω moves to the optimum for that rate, ω* = 2 / (1 + √(1 − θ)), whose rate is ω* − 1. At or
//   above the optimum r = ω − 1 and the formula returns ω itself, so ω settles there. ω* is kept
//   below kMaxAdaptive and rounded to a grid of 2 − ω (8 steps per halving), so that ω changes only
//   a few times per solve and a CUDA backend can replay the blocks it has seen (graph_cache.hpp).
//   A rise above the smallest error (the same margin) halves ω − 1 instead of dropping it.
// Where the error falls sublinearly (no linear rate: nearly disconnected clusters at small ε) the
// estimate is meaningless and the adaptive ω wanders; measured on such a problem it took ~15% more
// iterations than a fixed 1.8, and 1.7–2.1× fewer where the error falls linearly (a NumPy
// prototype of this loop on the shuffled regression at n = 300, ε = 0.05, tol 1e-4; relaxation_test.cpp).
#pragma once

#include <limits>

namespace flashsinkhorn::detail {

class relaxation_control {
 public:
  // How far a check's error may rise above the smallest before the safeguard acts: above the
  // readings' own noise. On a plateau (the error flat for thousands of iterations while a potential
  // drifts) successive float64 readings differ by ~1e-11 relative; a strict "no rise" rule fell back
  // there and lost the speed-up (3498 → 2488 iterations instead of → 488 on relaxation_test.cpp's
  // problem). A diverging or oscillating relaxed loop rises by far more. At a float32 noise floor
  // (readings wandering by percents) it acts, harmlessly: no ω gets below that floor.
  static constexpr double kErrorRiseMargin = 1e-2;
  static constexpr double kMaxAdaptive = 1.999;
  static constexpr double kInfinity = std::numeric_limits<double>::infinity();

  relaxation_control(double initial, bool adaptive) : omega_(initial), adaptive_(adaptive) {}

  [[nodiscard]] double omega() const noexcept { return omega_; }
  // The safeguard acted at some check (fixed: ω = 1 since; adaptive: ω − 1 halved).
  [[nodiscard]] bool fell_back() const noexcept { return fell_back_; }

  // After a check: `error`, the marginal error at the end of a block of `iterations` iterations.
  void observe(double error, int iterations);

 private:
  void adapt(double error, int iterations);

  double omega_;
  bool adaptive_;
  bool fell_back_ = false;
  double smallest_ = kInfinity;
  double previous_ = kInfinity;
};

}  // namespace flashsinkhorn::detail
