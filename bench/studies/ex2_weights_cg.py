#!/usr/bin/env python3
"""Whether the HVP's CG notices single-precision weights: FLASHSINKHORN_FP32_PASS_EXP=ex2
(math/exp_by_exp2.hpp) emulated on the host, in dense float64 (docs/cuda_backend.md, session 59).

Under ex2 the fp32 mode's float64 plan passes take each weight e^(S_ij − m_i) with a relative error of
up to ~4e-7 (2^f by the MUFU's ex2.approx.ftz.f32 on f rounded to single precision) instead of
float64's 1e-16, and the row pass (P·v, the x rows) and the column pass (Pᵀ·u, the y rows) round
independently: the Schur operator the CG applies,
    S̃·v = c̃∘v − Pcolᵀ·diag(1/ã)·Prow·v,   S = diag(c) − Pᵀ·diag(1/a)·P,
is then S to ~4e-7 an entry and no longer exactly symmetric. This study solves S̃·x = r and S·x = r by
the same CG (bench/studies/sparse_schur_preconditioner.py's: diag(c) preconditioner, tolerances 1e-4
and 2e-5) and compares the iteration counts and each solution's distance to the exact one
(numpy.linalg.solve on S): the ex2 weights are harmless where both stay at the CG's own tolerance.

Emulation of a weight w = e^t, t = S_ij − m_i ≤ 0 (m_i the row's largest score): y = t·log₂e, j =
round(y), f = float32(y − j), 2^f = float32 exp2(f)·(1 + δ) with δ uniform in ±2⁻²² drawn per entry
and per orientation (ex2.approx's bound), w = 2^f·2^j; the rows' (columns') softmax from those
weights, times a (b). Protocol: the study's plan (x, y ~ N(0, I_d), n = m = 2,000, ε = 0.1, 50
alternating iterations, P from f̃ = T_f(g)), ridge ε·1e-5·n, a zero-mean random right-hand side.

    python3 bench/studies/ex2_weights_cg.py --ds 3,8,64   # ~1 min on 2 cores, ~1 GB
Measured on the 2-core development VM, 2026-12-08 (session 59), n = 2,000: the ex2 weights 1.2–1.4e-7
off float64 (median; max 5.3e-7 with the softmax's normalisation), rows against columns 1.5–2.6e-7
of the largest entry; CG iterations and distances to x* equal at every d and tolerance — d = 3 24 / 28
iterations (1e-4 / 2e-5), 5.6e-5 at 2e-5; d = 8 103 / 122, 2.4e-5; d = 64 113 / 130, 6.0e-6. At 300
points and d = 8 (174 iterations on a near-permutation plan) ex2 took 178 / 188 against 174 / 183, to
1.6e-5 / 3.3e-6 against 1.9e-5 / 3.8e-6.
"""

from __future__ import annotations

import argparse

import numpy as np

from sparse_schur_preconditioner import EPS, cg_solve, plan

LOG2E = 1.4426950408889634


def ex2_softmax(log_weights: np.ndarray, axis: int, rng: np.random.Generator) -> np.ndarray:
    """The softmax of log_weights along `axis` with every exponential as exp_by_exp2 takes it."""
    t = log_weights - log_weights.max(axis=axis, keepdims=True)
    y = t * LOG2E
    j = np.rint(y)
    two_f = np.exp2((y - j).astype(np.float32)).astype(np.float64)
    two_f *= 1 + rng.uniform(-2.0**-22, 2.0**-22, size=two_f.shape)
    w = np.ldexp(two_f, j.astype(np.int64))
    w[y < -1021] = 0.0
    return w / w.sum(axis=axis, keepdims=True)


def study(n: int, d: int) -> None:
    p, rng = plan(n=n, d=d)
    a, c = p.sum(1), p.sum(0)
    ridge = EPS * 1e-5 * n
    schur = np.diag(c * (1 + ridge)) - p.T @ (p / a[:, None])
    rhs = rng.normal(size=n)
    rhs -= rhs.mean()
    exact = np.linalg.solve(schur, rhs)
    log_p = np.log(p, out=np.full_like(p, -5000.0), where=p > 0)  # zeros: far below any kept weight
    by_rows = a[:, None] * ex2_softmax(log_p, 1, rng)      # the x-rows pass's P
    by_columns = c[None, :] * ex2_softmax(log_p, 0, rng)   # the y-rows pass's P
    a_ex2, c_ex2 = by_rows.sum(1), by_columns.sum(0)

    def apply_ex2(v: np.ndarray) -> np.ndarray:
        return c_ex2 * (1 + ridge) * v - by_columns.T @ ((by_rows @ v) / a_ex2)

    kept = p > p.max(axis=1, keepdims=True) * 2.0**-1000  # (weights below 2^−1021 of the row's largest read 0)
    entry = np.abs(by_rows - p)[kept] / p[kept]
    print(f"d = {d}: ex2 weights' relative error against float64 {np.median(entry):.1e} (median), "
          f"{entry.max():.1e} (max); rows vs columns {np.abs(by_rows - by_columns).max() / p.max():.1e} of max P")
    for tolerance in (1e-4, 2e-5):
        for name, operator, c_used in (("float64", schur, c), ("ex2", apply_ex2, c_ex2)):
            x, iterations = cg_solve(operator, rhs, lambda r, c_used=c_used: r / (c_used * (1 + ridge)), tolerance)
            error = np.linalg.norm(x - exact) / np.linalg.norm(exact)
            print(f"  tol {tolerance:.0e} {name:8s} CG iterations {iterations:4d}, |x − x*|/|x*| {error:.2e}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--ds", default="3,8")
    args = ap.parse_args()
    for d in (int(v) for v in args.ds.split(",")):
        study(args.n, d)


if __name__ == "__main__":
    main()
