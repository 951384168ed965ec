#!/usr/bin/env python3
"""Which inner solver suits S_k, the sparse_plan preconditioner's matrix (docs/cuda_backend.md, session 53).

The HVP's CG is preconditioned by
    S_k = diag(d) − Wᵀ·W,   W_iu = √a_i·s_iu on each x row's 8 largest plan entries,
d = max(c, (1 + 1e-10)·WᵀW·1) + 1e-10·max c (core/sparse_plan_preconditioner.hpp), solved at every
outer iteration by an inner Jacobi CG to 1e-2. On the suite's HVP case that inner CG runs ~800
iterations a product (most solves stop at the cap of 200), and on the GPU each iteration is
latency-bound (bench/sparse_schur_bench.cu): the iteration count is what costs. S_k is an M-matrix
close to a weighted graph Laplacian with many weakly coupled components, the case classical
(Ruge–Stüben) algebraic multigrid is built for. This study builds the case's S_k in float64
(the suite's data: protocol.make_data, ε = 0.1, 50 Sinkhorn iterations of our CPU backend in fp64,
then the x rows' softmax keyed by g) and counts, for a random right-hand side with zero mean,
CG iterations to 1e-2 and 1e-6 (at most 5,000) with the Jacobi preconditioner and with one V-cycle
of pyamg's Ruge–Stüben and smoothed-aggregation hierarchies; it also prints how many entries the
columns of W hold (the device solve's per-column loop).

    pip install pyamg   # the study's own dependency, not the library's
    PYTHONPATH=build/python python3 bench/studies/sparse_schur_inner_solvers.py --n 1000 --out F.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "suite"))

EPS, ITERS, ENTRIES = 0.1, 50, 8


def build_s_k(n: int, d: int) -> tuple:
    """(S_k as scipy CSR, the column entry counts of W) for the suite's case at n = m."""
    import scipy.sparse as sp
    import torch

    import flashsinkhorn as fs
    from protocol import make_data

    x, y, a, b = (np.asarray(v, dtype=np.float64) for v in make_data(n, d))
    solver = fs.Solver(torch.as_tensor(x), torch.as_tensor(y), torch.as_tensor(a), torch.as_tensor(b), eps=EPS,
                       iters=ITERS, tol=0, precision="fp64", device="cpu")
    g = np.asarray(solver.solve().g, dtype=np.float64)
    rows, cols, vals = [], [], []
    column_mass = np.zeros(n)
    for i0 in range(0, n, 1000):
        block = slice(i0, min(n, i0 + 1000))
        cost = np.sum(x[block] ** 2, 1)[:, None] + np.sum(y ** 2, 1)[None, :] - 2 * x[block] @ y.T
        scores = (g[None, :] - cost) / EPS + np.log(b)[None, :]
        s = np.exp(scores - scores.max(1, keepdims=True))
        s /= s.sum(1, keepdims=True)
        column_mass += (a[block, None] * s).sum(0)
        top = np.argpartition(-s, ENTRIES, axis=1)[:, :ENTRIES]
        for r, keys in enumerate(top):
            i = i0 + r
            rows += [i] * ENTRIES
            cols += list(keys)
            vals += list(np.sqrt(a[i]) * s[r, keys])
    w = sp.csr_matrix((vals, (rows, cols)), shape=(n, n))
    wtw = (w.T @ w).tocsr()
    coupling = np.asarray(wtw.sum(1)).ravel()
    diagonal = np.maximum(column_mass, (1 + 1e-10) * coupling) + 1e-10 * column_mass.max()
    return (sp.diags(diagonal) - wtw).tocsr(), np.bincount(np.asarray(cols), minlength=n)


def cg_iterations(s_k, rhs, preconditioner, tolerance: float) -> dict:
    import scipy.sparse.linalg as spla

    count = [0]
    started = time.perf_counter()
    solution, _ = spla.cg(s_k, rhs, rtol=tolerance, maxiter=5000, M=preconditioner,
                          callback=lambda _: count.__setitem__(0, count[0] + 1))
    residual = np.linalg.norm(rhs - s_k @ solution) / np.linalg.norm(rhs)
    return {"iterations": count[0], "relative_residual": float(residual),
            "seconds": round(time.perf_counter() - started, 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--d", type=int, default=64)
    parser.add_argument("--out", help="write the JSON here as well as to stdout")
    args = parser.parse_args()
    try:
        import pyamg
        import scipy.sparse as sp
    except ImportError as error:
        sys.exit(f"sparse_schur_inner_solvers: needs scipy and pyamg ({error}); pip install pyamg")
    s_k, column_entries = build_s_k(args.n, args.d)
    rhs = np.random.default_rng(0).standard_normal(args.n)
    rhs -= rhs.mean()
    record = {"n": args.n, "d": args.d, "eps": EPS, "sinkhorn_iterations": ITERS, "entries_per_row": ENTRIES,
              "column_entries": {"mean": float(column_entries.mean()),
                                 "percentiles_50_90_99_max": [float(v) for v in
                                                              np.percentile(column_entries, [50, 90, 99, 100])]},
              "solvers": {}}
    jacobi = sp.diags(1 / s_k.diagonal())
    record["solvers"]["jacobi"] = {f"to_{t:g}": cg_iterations(s_k, rhs, jacobi, t) for t in (1e-2, 1e-6)}
    for name, hierarchy in (("ruge_stuben", pyamg.ruge_stuben_solver(s_k, max_coarse=50)),
                            ("smoothed_aggregation",
                             pyamg.smoothed_aggregation_solver(s_k, symmetry="symmetric", max_coarse=50))):
        entry = {"levels": len(hierarchy.levels), "operator_complexity": round(hierarchy.operator_complexity(), 3)}
        for t in (1e-2, 1e-6):
            entry[f"to_{t:g}"] = cg_iterations(s_k, rhs, hierarchy.aspreconditioner(cycle="V"), t)
        record["solvers"][name] = entry
    text = json.dumps(record, indent=1)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
