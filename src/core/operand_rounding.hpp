// The values a backend's passes see for float64 inputs in a precision mode: the operands of the
// score and quadratic dot products are stored as float (fp32), tf32 or bf16, round-to-nearest-even
// (math/round_operand.hpp) — the same rounding as the CPU backend's packed clouds and the CUDA
// backend's stored points and directions. fp64 keeps the values.
// The Hessian-vector product computes its host-side terms from these rounded points and directions
// (core/joint_hvp.cpp), so that they cancel consistently against the passes' second moments: on a
// self-problem in bf16, the term with exact host points and rounded pass operands was 15× further
// from float64 (bench/studies/centred_second_moment.py).
#pragma once

#include <vector>

#include "flashsinkhorn/options.hpp"
#include "math/round_operand.hpp"

namespace flashsinkhorn::detail {

[[nodiscard]] inline double rounded_operand(double value, precision mode) {
  const auto single = static_cast<float>(value);
  switch (mode) {
    case precision::fp64:
      return value;
    case precision::fp32:
      return single;
    case precision::tf32:
      return math::round_to_tf32(single);
    case precision::bf16:
      return math::round_to_bf16(single);
  }
  return value;
}

[[nodiscard]] inline std::vector<double> rounded_operands(std::vector<double> values, precision mode) {
  if (mode == precision::fp64) return values;
  for (double& v : values) v = rounded_operand(v, mode);
  return values;
}

}  // namespace flashsinkhorn::detail
