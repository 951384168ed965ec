// Denormal floats flushed to zero on this thread while a denormals_flushed lives: results (FTZ) and
// operands (DAZ), MXCSR bits 15 and 6 of x86's SSE/AVX unit; the caller's mode comes back after.
//
// Why: the softmax terms 2^{s_j − max} of a plan pass are clamped at 2⁻¹²⁶ (math/fast_exp.hpp), and
// on a sharp plan most of a row's terms sit there; multiplied by values below 1 (a plan pass's V, a
// quadratic pass's u·z) they become denormal floats, which x86 computes in microcode at ~100 cycles
// an operation. Measured (2-core VM, 2,000 × 8, ε = 0.1, fp32, one HVP's passes, FLASHSINKHORN_TRACE):
// a pass with k = 8 values 34.5 ms and the quadratic pass 47.9 ms, against 4.3 / 5.1 ms in float64.
// The GPU's exponentials flush to zero too (ex2.approx.ftz), so the CPU keeps the GPU's numerics:
// what is flushed lies below 2⁻¹²⁶ of a row's largest term.
// Elsewhere (not x86, or no SSE) it does nothing.
#pragma once

#if defined(__SSE__)
#include <xmmintrin.h>
#endif

namespace flashsinkhorn::detail {

class denormals_flushed {
 public:
#if defined(__SSE__)
  denormals_flushed() noexcept : saved_(_mm_getcsr()) { _mm_setcsr(saved_ | kFlushToZero | kDenormalsAreZero); }
  ~denormals_flushed() { _mm_setcsr(saved_); }
#else
  denormals_flushed() noexcept = default;
#endif
  denormals_flushed(const denormals_flushed&) = delete;
  denormals_flushed& operator=(const denormals_flushed&) = delete;

 private:
#if defined(__SSE__)
  static constexpr unsigned kFlushToZero = 0x8000;      // MXCSR.FTZ
  static constexpr unsigned kDenormalsAreZero = 0x0040;  // MXCSR.DAZ
  unsigned saved_;
#endif
};

}  // namespace flashsinkhorn::detail
