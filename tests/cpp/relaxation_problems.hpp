// The over-relaxation tests' problem and options (relaxation_test.cpp, adaptive_relaxation_test.cpp).
#pragma once

#include "flashsinkhorn/options.hpp"
#include "test_problems.hpp"

namespace testing_support {

// n = m = 60, d = 2, points N(0, 1) and N(1, 1): costs up to ~40, C/ε up to ~800 at ε = 0.05, where
// the plain loop needs ~10⁴–10⁵ iterations for tol = 1e-6 (N(0, 10²) clouds need more than 2·10⁵).
struct ill_conditioned {
  reference::cloud x = reference::random_cloud(60, 2, 11, 1.0);
  reference::cloud y = reference::random_cloud(60, 2, 12, 1.0, 1.0);
  double eps = 0.05;
};

// CPU, fp64, ε-scaling 0.5, tol 1e-6, ω = `relaxation` (adaptive from there when `adaptive`).
inline flashsinkhorn::options relaxed_options(double relaxation, bool adaptive = false) {
  flashsinkhorn::options o;
  o.device = flashsinkhorn::device_kind::cpu;
  o.precision = flashsinkhorn::precision::fp64;
  o.scaling = 0.5;
  o.tolerance = 1e-6;
  o.max_iterations = 200000;
  o.relaxation = relaxation;
  o.adaptive_relaxation = adaptive;
  return o;
}

}  // namespace testing_support
