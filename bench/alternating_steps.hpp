// The two half-steps of the solver's plain alternating iteration (solver_loop.cpp with ω = 1 and no
// error read): f ← T_f(g), then g ← T_g(f), each reading its own old potential (previous = out), as
// the solver's steps do — the fp32 narrow softmin's predicted references (kernel_variant.hpp) come
// from it, so a benchmark without it would time another kernel than a solve runs. Header-only.
#pragma once

#include "core/backend.hpp"

namespace flashsinkhorn::bench {

inline detail::softmin_step f_update(double eps) {
  using namespace detail;
  return {side::x, side::y, slot::g, slot::f, slot::f, eps, 1, 1, false};
}

inline detail::softmin_step g_update(double eps) {
  using namespace detail;
  return {side::y, side::x, slot::f, slot::g, slot::g, eps, 1, 1, false};
}

}  // namespace flashsinkhorn::bench
