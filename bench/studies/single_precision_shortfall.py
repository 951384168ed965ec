#!/usr/bin/env python3
"""When does a single-precision HVP fall short and get redone in float64? A CPU study for a rule
that would start such products in float64 (docs/cuda_backend.md, "Session 55").

Each case is the suite's HVP case (suite_hvp_case.py: x, y ~ N(0, I_d), random weights, 50 Sinkhorn
iterations, Solver.hvp with the sparse preconditioner, CG to 2e-5) at one ε and precision, on the
CPU backend, whose single-precision modes round the operands as the GPU's do (operand_rounding.hpp).
Beside the product's report (redone_in_float64, CG iterations) it prints candidate predictors,
formed in float64 from the solve's potentials:
  - leak: per row i of the plan keyed by g, 1 − max_j s_ij, s_i = softmax_j((g_j − C_ij)/ε + log b_j):
    how far the row is from a single match (the weak couplings of docs/math.md's near-matching S);
    its median and 10th percentile over the rows, and the share of rows with leak < 1e-6 (rows that
    float32 sums, u = 6e-8, see as a single match);
  - entropy: the share of rows with H_i = −Σ_j s_ij log s_ij < 1e-5, the same rows seen through a
    quantity that passes give without a row maximum (H_i = lse_i − Σ_j s_ij S_ij: one float64 pass
    with one value column and the cost);
  - score: max_ij C_ij / ε, the size of the scores whose rounding (u of the mode) the passes carry.

    PYTHONPATH=build/python python3 bench/studies/single_precision_shortfall.py --ns 300,1000 \\
        --ds 3,8,64 --eps 0.03,0.1,0.3,1 --precisions fp32,tf32,bf16 --out shortfall.jsonl

Measured on the 2-core development VM, 2026-12-07 (session 55, 15703ab; 275 cases, n = 300–5,000,
bench/results/single_precision_shortfall_cpu_2026-12-07_s55.json): every case with ≥ 9% of its rows
below a leak of 1e-6 fell short (100 of 100) in fp32, tf32 and bf16 alike; below 9%, 9 of 175 did
(d = 3 at ε ≤ 0.02 with 4%, 5,000 × 16 at ε = 0.2 with 2.7%, and a band at 5.5–8.3%). One-sided: a
high share foresees the fall, a low one does not promise success. The entropy share sorts the same
rows (fp32, 111 cases, ..._s55b.json: ≥ 9% → 44 of 44 fell short, 6 of 67 below). The median leak
and the score size do not separate the cases.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "suite"))


def plan_statistics(x: np.ndarray, y: np.ndarray, b: np.ndarray, g: np.ndarray, eps: float) -> dict:
    """The leak, entropy and score statistics of the docstring, in float64."""
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    cost = (x64 ** 2).sum(1)[:, None] + (y64 ** 2).sum(1)[None, :] - 2.0 * x64 @ y64.T
    scores = (g[None, :] - cost) / eps + np.log(b)[None, :]
    scores -= scores.max(axis=1, keepdims=True)
    rows = np.exp(scores)
    rows /= rows.sum(axis=1, keepdims=True)
    leak = 1.0 - rows.max(axis=1)
    entropy = -(rows * np.log(np.where(rows > 0, rows, 1.0))).sum(axis=1)
    return {"leak_median": float(np.median(leak)), "leak_p10": float(np.quantile(leak, 0.1)),
            "rows_leak_below_1e-6": float(np.mean(leak < 1e-6)),
            "rows_entropy_below_1e-5": float(np.mean(entropy < 1e-5)), "score_max": float(cost.max() / eps)}


def run_case(n: int, d: int, eps: float, precision: str) -> dict:
    import flashsinkhorn as fs
    from drv_flashsinkhorn import HVP_CG_TOL
    from protocol import HVP_ITERS, hvp_direction, make_data

    x, y, a, b = make_data(n, d)
    direction = hvp_direction(n, d)
    solver = fs.Solver(x, y, a, b, eps=eps, iters=HVP_ITERS, tol=0, precision=precision, device="cpu")
    result = solver.solve()
    start = time.perf_counter()
    report = solver.hvp(direction, tol=HVP_CG_TOL, iters=1000, preconditioner="sparse")
    seconds = time.perf_counter() - start
    record = {"n": n, "d": d, "eps": eps, "precision": precision, "redone_in_float64": bool(report.redone_in_float64),
              "cg_iterations": int(report.cg_iterations), "plan_passes": int(report.plan_passes),
              "relative_residual": float(report.relative_residual), "hvp_s": seconds}
    record.update(plan_statistics(np.asarray(x), np.asarray(y), np.asarray(b), np.asarray(result.g, dtype=np.float64),
                                  eps))
    return record


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ns", default="300,1000")
    parser.add_argument("--ds", default="3,8,64")
    parser.add_argument("--eps", default="0.03,0.1,0.3,1")
    parser.add_argument("--precisions", default="fp32,tf32,bf16")
    parser.add_argument("--out", help="JSON lines, one a case")
    args = parser.parse_args()
    out = open(args.out, "a") if args.out else None
    print(f"{'n':>6} {'d':>4} {'eps':>6} {'prec':>5} {'redone':>6} {'CG':>4} {'leak med':>9} {'leak p10':>9} "
          f"{'<1e-6':>6} {'score':>8} {'hvp s':>7}")
    for n in (int(v) for v in args.ns.split(",")):
        for d in (int(v) for v in args.ds.split(",")):
            for eps in (float(v) for v in args.eps.split(",")):
                for precision in args.precisions.split(","):
                    r = run_case(n, d, eps, precision)
                    print(f"{n:>6} {d:>4} {eps:>6g} {precision:>5} {str(r['redone_in_float64']):>6} "
                          f"{r['cg_iterations']:>4} {r['leak_median']:>9.2e} {r['leak_p10']:>9.2e} "
                          f"{r['rows_leak_below_1e-6']:>6.3f} {r['score_max']:>8.3g} {r['hvp_s']:>7.3f}", flush=True)
                    if out:
                        out.write(json.dumps(r) + "\n")
                        out.flush()


if __name__ == "__main__":
    main()
