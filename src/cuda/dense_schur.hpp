// The sparse_plan preconditioner with every entry kept, for systems small enough to factor:
//   S = diag(d) − sᵀ·diag(a)·s,   s the x rows' softmax keyed by g (n × m, rows summing to 1),
//   d = max(c, (1 + kSparsePlanDominance)·sᵀa) + shift   (sparse_plan_diagonal: S_k's rule at k = m),
// i.e. S_k of sparse_schur.hpp with K = m. Built on the stream from s (written by the backend:
// launch_plan_softmax in fp64 and fp32, a plan pass with V = I in tf32 and bf16):
// B = diag(√a)·s (cuBLAS DGMM), S = diag(d) − BᵀB (SYRK), its Cholesky factor (cuSOLVER potrf); solve
// enqueues x = S⁻¹·r (potrs). Why: the inner Jacobi CG on the sparse S_k costs ~1,000 latency-bound
// iterations a product (docs/cuda_backend.md, session 53), while at 1,000 points s (2·n·m·d FMAs),
// the SYRK and the factor are each at most a few 10⁹ flops, and with S itself as the preconditioner
// the outer CG takes one or two iterations. dense_schur_fits says where.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "cuda/device_buffer.hpp"
#include "cuda/kernel_variant.hpp"

namespace flashsinkhorn::detail {

// Whether the dense preconditioner replaces the sparse one for n x rows, m y columns, d coordinates.
// Small systems, in every mode: m ≤ 2,048 (S ≤ 32 MiB), n·m ≤ 2²⁴ (s ≤ 128 MiB), and the plan pass
// with V = I_m that writes s in tf32 / bf16, n·m·(d + m) multiply-adds, at most 10¹⁰ (1,000 × 1,000
// × 64: 1.1·10⁹; 2,000 × 2,000: 8.5·10⁹). Larger ones only where s is written directly
// (`softmax_direct`: launch_plan_softmax, fp64 and fp32 — and so every product the float64 replica
// runs) and only where a plan pass is dear beside the factor: m ≤ 80·d, m ≤ 12,288 (S ≤ 1.2 GB),
// n·m ≤ 2²⁷ (s ≤ 1 GiB), and the build's float64 work — 2·n·m·d for s, n·m² for the SYRK, m³/3 for
// the factor — at most 3·10¹². Why m ≤ 80·d (H100, Solver.hvp at 10,000 points, dense vs S_k by
// FLASHSINKHORN_SCHUR_SOLVE): at d = 512 / 1,024 the outer CG drops from 23 / 15 iterations to 1
// and the product from 1.45 / 3.10 s to 0.99 / 2.60 s (session 57), at d = 256 / 128 from 15 / 8
// to 1 and 523 / 226 ms to 386 / 215 ms (session 58, m/d = 39 / 78); at d = 3 / 8 / 64 (m/d = 156
// and more) the build (s, SYRK, potrf at m = 10,000) outweighs the 6–30 plan passes it saves
// (37 → 68, 34 → 73, 108 → 132 ms; docs/cuda_backend.md, sessions 57–58). `choice`
// (FLASHSINKHORN_SCHUR_SOLVE, kernel_variant.hpp): `sparse` never, `dense` without the m ≤ 80·d
// condition.
[[nodiscard]] bool dense_schur_fits(std::int64_t n, std::int64_t m, std::int64_t d, bool softmax_direct,
                                    schur_solve choice = schur_solve::automatic);

// The device memory of the dense preconditioner, kept between products by the backend.
struct dense_schur_buffers {
  device_buffer<double> identity;  // I_m, the values of the tf32 and bf16 passes (plan_softmax_applies)
  device_buffer<double> softmax;   // s, then B (n × m)
  device_buffer<double> matrix;    // S, then its Cholesky factor (m × m, column-major, lower)
  device_buffer<double> masses, root_masses, column_sums, coupling, workspace;
  device_buffer<int> info;
  std::int64_t identity_size = 0;  // m of the identity written
};

// Enqueues I_m into buffers.identity (once per m) and returns it.
const double* dense_schur_identity(dense_schur_buffers& buffers, std::int64_t m, cudaStream_t stream);

class dense_schur {
 public:
  // From s = buffers.softmax (n × m row-major on the device, written by the caller's plan pass on
  // `stream`), the row masses a and the damped column sums c (host), and the diagonal shift. Waits
  // for the factor (one host synchronisation) to learn whether S was positive definite.
  dense_schur(dense_schur_buffers& buffers, std::int64_t n, std::int64_t m, const std::vector<double>& row_masses,
              const std::vector<double>& column_sums, double shift, cudaStream_t stream);

  // Whether potrf succeeded (S numerically positive definite); else the caller takes the sparse path.
  [[nodiscard]] bool factored() const { return factored_; }

  // Enqueues solution = S⁻¹·rhs (device (m,) vectors, distinct).
  void solve(const double* rhs, double* solution, cudaStream_t stream) const;

 private:
  dense_schur_buffers& buffers_;
  std::int64_t m_ = 0;
  bool factored_ = false;
};

}  // namespace flashsinkhorn::detail
