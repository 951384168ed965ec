#!/usr/bin/env python3
"""How far a sparse approximation of the plan preconditions the HVP's CG (issue 5; docs/cuda_backend.md).

The CG of the Hessian-vector product solves the potentials' Schur complement
    S = diag(c) − Pᵀ·diag(1/a)·P   (+ ridge·diag(c), flash-sinkhorn's damping),
whose ill-conditioning comes from a plan close to a permutation (at ε = 0.1 on N(0, I_64) clouds the
largest entry holds ~87% of its row). A diagonal barely helps (this study: 105–113 iterations against
151 with none). Keeping only the k largest entries of each row of P gives a sparse
    S_k = diag(c)·(1 + ridge) − P_kᵀ·diag(1/a)·P_k
whose exact solve (here scipy's sparse LU) preconditions CG on the true S.

Protocol (the issue's, scaled down so that S fits densely): x, y ~ N(0, I_64), n = m = 2,000, seed 0,
uniform weights, ε = 0.1, 50 alternating Sinkhorn iterations, the plan P_ij = a_i b_j exp((f̃_i + g_j −
C_ij)/ε) with f̃ = T_f(g) (core/solved_plan.hpp), ridge = ε·1e-5·n, a random right-hand side with zero
mean, CG to relative residual 1e-4 and 2e-5. Prints the iteration counts and ‖S − S_k‖_F/‖S‖_F.

    python3 bench/studies/sparse_schur_preconditioner.py   # ~2 min on 2 cores, ~2 GB
    python3 bench/studies/sparse_schur_preconditioner.py --d 3 --ks 4,8,16,32
Measured on the 2-core development VM, 2026-11-30 (session 8):
    none 151 / 177, diag(c) 113 / 130, diag(S) 105 / 122; top-1 122 / 146, top-2 44 / 51,
    top-4 8 / 9, top-8 1 / 1. (Session 56, the cost by the GEMM form: the same but none 151 / 178.)
At d = 3 the plan is blurry (session 56, same VM, 2026-12-07; the largest entry's mean share of its
row 0.161, against 0.710 at d = 8) and S_k barely helps: diag(c) 24 / 28, top-4 23 / 25, top-8
19 / 22, top-16 16 / 17, top-32 11 / 12 (the suite's GPU product at 10,000 × 3 took 16 iterations
with top-8, most of its time in the inner solves). d = 8: diag(c) 103 / 122, top-4 8 / 9, top-8
4 / 5, top-16 2 / 2, top-32 1 / 1. d = 512 (the cost by ‖x‖² + ‖y‖² − 2x·y, as --d 512 needs; share
0.872): diag(c) 99 / 116, top-4 7 / 7, top-8 1 / 1 (S_k = S to 5e-16).
"""

import argparse

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from scipy.special import logsumexp

N, D, EPS, ITERATIONS = 2000, 64, 0.1, 50


def plan(n=N, d=D, eps=EPS, iterations=ITERATIONS, seed=0):
    """(P, the generator after drawing the clouds): x, y ~ N(0, I_d), n = m, uniform weights, the
    alternating iterations, P_ij = a_i b_j exp((f̃_i + g_j − C_ij)/ε) with f̃ = T_f(g) (rows
    renormalised from g, core/solved_plan.hpp). Also bench/studies/centred_schur_product.py's plan."""
    rng = np.random.default_rng(seed)
    x, y = rng.normal(size=(n, d)), rng.normal(size=(n, d))
    cost = (x * x).sum(1)[:, None] + (y * y).sum(1)[None, :] - 2 * x @ y.T  # no n × m × d array
    log_w = np.full(n, -np.log(n))
    f, g = np.zeros(n), np.zeros(n)
    for _ in range(iterations):
        f = -eps * logsumexp((g[None, :] - cost) / eps + log_w[None, :], axis=1)
        g = -eps * logsumexp((f[:, None] - cost) / eps + log_w[:, None], axis=0)
    f_tilde = -eps * logsumexp((g[None, :] - cost) / eps + log_w[None, :], axis=1)
    return np.exp(log_w[:, None] + log_w[None, :] + (f_tilde[:, None] + g[None, :] - cost) / eps), rng


def cg_solve(apply, rhs, precondition, tolerance, max_iterations=2000):
    """(x, iterations): preconditioned CG on the operator `apply` (a matrix or a function of a vector)
    to relative residual `tolerance`, or max_iterations."""
    product = apply if callable(apply) else (lambda v: apply @ v)
    x, r = np.zeros_like(rhs), rhs.copy()
    z = precondition(r)
    p, rz, norm = z.copy(), r @ z, np.linalg.norm(rhs)
    for k in range(max_iterations):
        q = product(p)
        alpha = rz / (p @ q)
        x += alpha * p
        r -= alpha * q
        if np.linalg.norm(r) <= tolerance * norm:
            return x, k + 1
        z = precondition(r)
        rz, rz_old = r @ z, rz
        p = z + (rz / rz_old) * p
    return x, max_iterations


def cg_iterations(matrix, rhs, precondition, tolerance, max_iterations=2000):
    return cg_solve(matrix, rhs, precondition, tolerance, max_iterations)[1]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=N)
    ap.add_argument("--d", type=int, default=D)
    ap.add_argument("--ks", default="1,2,4,8", help="the numbers k of entries kept per row")
    args = ap.parse_args()
    n = args.n
    p, rng = plan(n=n, d=args.d)
    a = p.sum(1)
    c = p.sum(0)
    ridge = EPS * 1e-5 * n
    schur = np.diag(c * (1 + ridge)) - p.T @ (p / a[:, None])
    rhs = rng.normal(size=n)
    rhs -= rhs.mean()
    print(f"largest entry's share of its row (mean): {(p.max(1) / p.sum(1)).mean():.3f}")
    tolerances = (1e-4, 2e-5)
    diagonal = np.diag(schur)
    for name, precondition in (("none", lambda r: r), ("diag(c)", lambda r: r / (c * (1 + ridge))),
                               ("diag(S)", lambda r: r / diagonal)):
        print(f"{name:8s} CG iterations {[cg_iterations(schur, rhs, precondition, t) for t in tolerances]}")
    order = np.argsort(-p, axis=1)
    for k in (int(v) for v in args.ks.split(",")):
        rows = np.repeat(np.arange(n), k)
        cols = order[:, :k].ravel()
        p_k = sp.csr_matrix((p[rows, cols], (rows, cols)), shape=p.shape)
        s_k = sp.diags(c * (1 + ridge)) - p_k.T @ sp.diags(1 / a) @ p_k
        factor = spla.splu(sp.csc_matrix(s_k))
        error = np.linalg.norm(schur - s_k.toarray()) / np.linalg.norm(schur)
        its = [cg_iterations(schur, rhs, factor.solve, t) for t in tolerances]
        print(f"top-{k}    CG iterations {its}  nnz(S_k) {s_k.nnz}  |S - S_k|/|S| {error:.2e}")


if __name__ == "__main__":
    main()
