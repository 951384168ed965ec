// e^x for float64 arguments at the MUFU's float32 relative accuracy: the exponential of the fp32
// mode's float64 plan passes (narrow_rows.cuh with Real = double, plan_rows_kernel.cuh with float
// points), which are bound by it — float64's exp is ~20 FP64 instructions, the H200's FP64 pipe runs
// at half the FP32 rate and has no MUFU.
//
//   x·log₂e = k + f,  k = rint(x·log₂e),  |f| ≤ ½   (float64: the split is exact to 2⁻⁵³·|x·log₂e|)
//   e^x = 2^f · 2^k,  2^f by ex2.approx.f32 (relative error ≤ 2⁻²² on |f| ≤ ½; f rounded to float
//                     adds ≤ 2⁻²⁵·ln2), 2^k written into the exponent bits exactly.
// So every e^x carries a relative error below 3·10⁻⁷ whatever the size of x — unlike an fp32
// score, whose rounding (2⁻²⁴ of scores of size cost_scale/ε, 10⁴ at the shuffled regression's
// scale) moves e^x by 10⁻³. Contract: x ≤ 0 or x = −∞ (the passes' arguments: a score less its row's
// maximum or LSE); below −1022·ln2 the result is 0 (float64's normal range: such terms are below a
// row sum's rounding); NaN stays NaN.
#pragma once

#include <cuda_runtime.h>

namespace flashsinkhorn::detail::kernels {

__device__ __forceinline__ double float64_mufu_exp(double x) {
  constexpr double kLog2e = 1.4426950408889634;
  const double y = x * kLog2e;
  const double clamped = fmin(fmax(y, -1022.0), 0.0);  // −∞ → −1022; rounding above 0 → 0
  const double k = rint(clamped);
  float two_f;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(two_f) : "f"(static_cast<float>(clamped - k)));
  // 2^k for k ∈ [−1022, 0]: the biased exponent k + 1023 ≥ 1, a normal float64.
  const double two_k = __longlong_as_double(static_cast<long long>(static_cast<int>(k) + 1023) << 52);
  const double e = static_cast<double>(two_f) * two_k;
  if (isnan(x)) return x;
  return y < -1022.0 ? 0.0 : e;
}

}  // namespace flashsinkhorn::detail::kernels
