#!/usr/bin/env python3
"""Would the centred form of the Schur product keep single precision's CG going (docs/math.md, the
float64 redo's "Untried")?

The HVP's and the adjoint's CG solve S λ = ρ with S = diag(c) − Pᵀ·diag(1/r)·P (r = P1, c = Pᵀ1), a
weighted graph Laplacian. The core computes
    standard   (S·v)_j = c_j v_j − Σ_i P_ij μ_i,        μ_i = (P·v)_i / r_i,
whose two terms nearly cancel in S's near-null directions on a plan close to a matching, so single
precision loses them (the sparse CG then breaks down and the product is redone in float64). The
alternative
    centred    (S·v)_j = Σ_i P_ij (v_j − μ_i)
forms each difference before the weighted sum. Here both are evaluated in float32 (the plan, v and
every sum rounded to float32; NumPy's pairwise sums, which are kinder than a GPU's running ones) against
the float64 product S64·v:
  - the relative error ‖S32·v − S64·v‖ / ‖S64·v‖ along eigenvectors of S64 (v = the k-th, ascending),
  - Jacobi-preconditioned CG (diag(c)) to a relative residual of 1e-5 — the residual always measured
    with S64 — on a consistent right-hand side ρ = S64·z (z ~ N(0, I), mean removed): iterations.

Protocol: x, y ~ N(0, I_64), n = m = 1,000, seed 3, uniform weights, ε = 0.1, 10 alternating Sinkhorn
iterations (the suite's forward), the plan with rows renormalised from g (sparse_schur_preconditioner.plan).

    python3 bench/studies/centred_schur_product.py   # ~5 s on 2 cores
Measured on the 2-core development VM, 2026-12-07 (session 51):
    eigenvector   1 (λ = −6.5e-20, a null direction of a disconnected component): standard 1.3e+01, centred 1.1e+07
    eigenvector  10 (λ = −7.4e-21): standard 6.7e+00, centred 1.3e+04
    eigenvector 100 (λ = 1.4e-11):  standard 1.0e+00, centred 1.0e+00
    eigenvector 500 (λ = 2.1e-05):  standard 2.9e-06, centred 1.9e-06
    eigenvector 999 (λ = 1.0e-03):  standard 4.4e-08, centred 4.1e-08
    CG iterations to 1e-5: float64 632; float32 standard 921; float32 centred 864
Where S's eigenvalue is not rounding-level, the centred form's error is at most ~1.5× smaller; it saves
~6% of the iterations; both float32 forms lose the near-null directions entirely (errors ≥ 1: both
take μ_i, a float32 average of v). It does not remove the need for float64 passes on such plans:
not worth a change to the CPU and GPU Schur kernels.
"""

from __future__ import annotations

import numpy as np

from sparse_schur_preconditioner import plan

N, D, EPS, ITERATIONS, SEED = 1000, 64, 0.1, 10, 3


def products(p64: np.ndarray, dtype):
    """(standard, centred): v ↦ S·v with the plan, v and every sum in `dtype`."""
    p = p64.astype(dtype)
    r, c = p.sum(1, dtype=dtype), p.sum(0, dtype=dtype)

    def mean_of_rows(v):
        return (p @ v) / r

    def standard(v):
        v = v.astype(dtype)
        return (c * v - p.T @ mean_of_rows(v)).astype(np.float64)

    def centred(v):
        v = v.astype(dtype)
        return (p * (v[None, :] - mean_of_rows(v)[:, None])).sum(0, dtype=dtype).astype(np.float64)

    return standard, centred


def jacobi_cg(product, exact, diagonal, rhs, tol=1e-5, iterations=5000) -> int:
    """Iterations of diag-preconditioned CG on 1⊥ with `product`, until the true residual ≤ tol·‖rhs‖."""
    x = np.zeros_like(rhs)
    r = rhs.copy()
    z = r / diagonal
    p, rz, norm = z.copy(), r @ z, np.linalg.norm(rhs)
    for k in range(iterations):
        q = product(p)
        q -= q.mean()
        curvature = p @ q
        if curvature <= 0:
            return -k  # broke down
        step = rz / curvature
        x += step * p
        r -= step * q
        true = rhs - exact @ x
        if np.linalg.norm(true - true.mean()) <= tol * norm:
            return k + 1
        z = r / diagonal
        rz, previous = r @ z, rz
        p = z + (rz / previous) * p
    return iterations


def main() -> None:
    p64, _ = plan(N, D, EPS, ITERATIONS, SEED)
    c = p64.sum(0)
    s64 = np.diag(c) - p64.T @ np.diag(1 / p64.sum(1)) @ p64
    eigenvalues, vectors = np.linalg.eigh(s64)
    standard, centred = products(p64, np.float32)
    for k in (1, 10, 100, 500, N - 1):
        v, exact = vectors[:, k], s64 @ vectors[:, k]
        error = lambda product: np.linalg.norm(product(v) - exact) / np.linalg.norm(exact)  # noqa: E731
        print(f"eigenvector {k} (λ = {eigenvalues[k]:.1e}): standard {error(standard):.1e}, centred {error(centred):.1e}")
    rng = np.random.default_rng(SEED + 1)
    z = rng.standard_normal(N)
    rhs = s64 @ (z - z.mean())
    rhs -= rhs.mean()
    diagonal = c.astype(np.float32).astype(np.float64)
    for name, product in (("float64", lambda v: s64 @ v), ("float32 standard", standard), ("float32 centred", centred)):
        print(f"CG iterations to 1e-5, {name}: {jacobi_cg(product, s64, diagonal, rhs)}")


if __name__ == "__main__":
    main()
