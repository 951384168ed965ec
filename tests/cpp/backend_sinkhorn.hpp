// Alternating Sinkhorn run directly on a backend (f ← T(g), g ← T(f), from g = 0): a solved
// state for tests of what comes after the solve (solved_plan, the potential system) without the
// solver's options and stopping rule.
#pragma once

#include "core/backend.hpp"

namespace testing_support {

inline void alternate_sinkhorn(flashsinkhorn::detail::backend& compute, double eps, int iterations) {
  using namespace flashsinkhorn::detail;
  compute.write_potential(slot::g, {});
  softmin_step to_f;
  to_f.key_potential = slot::g;
  to_f.out = slot::f;
  to_f.eps = eps;
  softmin_step to_g = to_f;
  to_g.rows = side::y;
  to_g.keys = side::x;
  to_g.key_potential = slot::f;
  to_g.out = slot::g;
  for (int it = 0; it < iterations; ++it) {
    compute.softmin(to_f);
    compute.softmin(to_g);
  }
}

}  // namespace testing_support
