#!/usr/bin/env python3
# python3 bench/studies/centred_second_moment.py (numpy only, ~1 min). Does rounding A and q to bf16/tf32 inside Σ_j P_ij (A_i·q_j) q_j explain the GPU's self-problem
# error? Dense float64 numpy, the fixed-potential term of the x-side product (joint_hvp.hpp (A)):
#   E_i = 2s [ r_i u_i p_i − (Q̄_i·A_i) p_i − u_i Q̄_i + Σ_j P_ij (A_i·q_j) q_j ],  u_i = p_i·A_i
# raw: the second moment with rounded A, q (as the fused pass), the rest exact (as the host);
# centred: Σ_j P_ij (A_i·(q_j − p_i))(q_j − p_i) with the same rounding applied to A and (q_j − p_i).
import numpy as np

from operand_rounding import bf16, tf32

rng = np.random.default_rng(55)
n, d, eps, s = 517, 7, 1.0, 1.0
for self_problem in (True, False):
    x = rng.normal(size=(n, d))
    y = x.copy() if self_problem else rng.normal(size=(n, d)) + 0.4
    a = np.full(n, 1 / n)
    C = s * ((x[:, None, :] - y[None, :, :]) ** 2).sum(-1)
    f = np.zeros(n); g = np.zeros(n)
    for _ in range(3000):
        f = -eps * np.log((a[None, :] * np.exp((g[None, :] - C) / eps)).sum(1))
        g = -eps * np.log((a[:, None] * np.exp((f[:, None] - C) / eps)).sum(0))
    P = a[:, None] * a[None, :] * np.exp((f[:, None] + g[None, :] - C) / eps)
    A = rng.normal(size=(n, d))
    r = P.sum(1); u = (x * A).sum(1); Qbar = P @ y; QA = (Qbar * A).sum(1)
    def fixed(second_moment):
        E = 2 * s * (r[:, None] * u[:, None] * x - QA[:, None] * x - u[:, None] * Qbar + second_moment)
        return 2 * s * (r[:, None] * A - E / eps)
    exact_M = ((P * (A @ y.T)) [:, :, None] * y[None, :, :]).sum(1)
    exact = fixed(exact_M)
    for name, rnd in (("tf32", tf32), ("bf16", bf16)):
        Ar, yr = rnd(A), rnd(y)
        raw_M = ((tf32(P * (Ar @ yr.T)))[:, :, None] * tf32(yr)[None, :, :]).sum(1)
        diff = y[None, :, :] - x[:, None, :]  # q_j − p_i, exact (the kernel would form it from rounded operands)
        diffr = rnd(diff)
        centred = ((tf32(P * np.einsum('ik,ijk->ij', Ar, diffr)))[:, :, None] * tf32(diffr)).sum(1)
        # Σ P (A·(q−p))(q−p) = M − u Q̄ − (Q̄·A) p + r u p  → E = 2s·centred directly
        E_c = 2 * s * centred
        cent = 2 * s * (r[:, None] * A - E_c / eps)
        err = lambda h: np.abs(h - exact).max() / np.abs(exact).max()
        print(f"{'self' if self_problem else 'x≠y '} {name}: raw moments {err(fixed(raw_M)):.2e}, centred {err(cent):.2e}")
