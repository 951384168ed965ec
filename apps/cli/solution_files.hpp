// The files `solve --out DIR` writes: f.npy (n,), g.npy (m,) and transport_x.npy (n, d), the
// barycentric projection T(x_i) = Σ_j P_ij y_j / Σ_j P_ij; with --grad the gradients of the
// returned cost (solver.hpp, envelope theorem): grad_x.npy (n, d), grad_y.npy (m, d), and
// grad_a.npy (n,), grad_b.npy (m,) for each side without a reach (the library's weight gradient is
// defined on balanced sides only). float64 in fp64 mode, float32 otherwise — one rule for every
// file, and the gradients are no more accurate than the precision mode that computed them.
#pragma once

#include "atomic_output.hpp"
#include "flashsinkhorn/solver.hpp"

namespace flashsinkhorn::cli {

// Stages the three files in `output` (the caller commits). Throws std::runtime_error naming the
// array if a value is not finite.
void stage_solution_files(const solver& solved, const result& r, std::int64_t dims, dtype stored_as,
                          atomic_output& output);

// Stages the gradient files in `output` (same contract). `o`: the options of the solve (its reaches).
void stage_gradient_files(const solver& solved, const options& o, std::int64_t n, std::int64_t m, std::int64_t dims,
                          dtype stored_as, atomic_output& output);

}  // namespace flashsinkhorn::cli
