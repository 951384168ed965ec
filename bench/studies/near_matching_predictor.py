#!/usr/bin/env python3
"""Can a single-precision HVP's fall to float64 be foreseen from the plan before the attempt?

A single-precision Solver.hvp with the sparse preconditioner redoes its whole product in float64
when its CG falls short (core/float64_replica.hpp); the attempt before costs about half of the
first product on the CPU (1,000 × 64 fp32: 156 ms, then 80 ms for the later products of the same
solve). If a statistic of the solved plan separated the problems that fall short from those that
do not, the first product could start in float64. The candidate here: each row's largest share,
t_i = max_j P_ij / Σ_j P_ij (P's rows renormalised from g, as the HVP's plan), summarised as
quantiles over the rows — near a matching, t_i → 1 and S's near-null directions sink below single
precision's rounding.

Protocol: the suite's data (protocol.make_data: x, y ~ N(0, I_d), random weights), n = m, fp32
solves of `iters` alternating iterations, the dense plan in float64 NumPy from the returned g, then
one Solver.hvp along the suite's direction (sparse, CG to 2e-5) recording redone_in_float64.

    PYTHONPATH=build/python python3 bench/studies/near_matching_predictor.py   # ~5 s on 2 cores
Measured on the 2-core development VM, 2026-12-07 (session 52, b80ed1c), median t_i and the outcome:
    redone in float64: 0.652 (1,000 × 3, ε 0.01), 0.798 / 0.803 (1,000 / 300 × 16, ε 0.1), 0.991,
                       0.994, 0.9997, 1.0 (d = 8, 16, 64 at ε 0.01; d = 64 at ε 0.1)
    not redone:        0.788 (300 × 3, ε 0.01), 0.741 / 0.696 (300 / 1,000 × 8, ε 0.1), ≤ 0.66 elsewhere
The medians overlap (0.652 redone, 0.788 not), and the 10% and 90% quantiles do no better
(0.996 redone, 0.997 and 0.99999 not): how sharp a plan's rows are does not decide whether S's
near-null directions sink below single precision — that depends on how its rows connect. No
threshold on t_i is safe, and a wrong "float64 first" costs the float64 passes where single
precision would have done (~10× slower on an H100): the first product keeps its attempt; the
later products of a solve skip it (float64_replica.hpp).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "suite"))


def row_top_shares(x: np.ndarray, y: np.ndarray, b: np.ndarray, g: np.ndarray, eps: float) -> np.ndarray:
    """t_i = max_j softmax_j((g_j − ‖x_i − y_j‖²)/ε + log b_j), float64."""
    cost = (x * x).sum(1)[:, None] + (y * y).sum(1)[None, :] - 2.0 * x @ y.T
    scores = (g[None, :] - cost) / eps + np.log(b)[None, :]
    top = scores.max(1, keepdims=True)
    return 1.0 / np.exp(scores - top).sum(1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ns", default="300,1000")
    parser.add_argument("--ds", default="3,8,16,64")
    parser.add_argument("--epss", default="0.01,0.1,1")
    parser.add_argument("--iters", type=int, default=50)
    args = parser.parse_args()

    import torch

    import flashsinkhorn as fs
    from protocol import hvp_direction, make_data

    print("    n    d    eps  t_i quantiles (10%, 50%, 90%)   1−t median  redone  product ms")
    for n in map(int, args.ns.split(",")):
        for d in map(int, args.ds.split(",")):
            x64, y64, a, b = make_data(n, d)
            x, y = torch.as_tensor(x64, dtype=torch.float32), torch.as_tensor(y64, dtype=torch.float32)
            direction = torch.as_tensor(hvp_direction(n, d), dtype=torch.float32)
            for eps in map(float, args.epss.split(",")):
                solver = fs.Solver(x, y, torch.as_tensor(a), torch.as_tensor(b), eps=eps, iters=args.iters, tol=0,
                                   precision="fp32")
                result = solver.solve()
                g = np.asarray(result.g, dtype=np.float64)
                shares = row_top_shares(x.double().numpy(), y.double().numpy(), b, g, eps)
                started = time.perf_counter()
                product = solver.hvp(direction, tol=2e-5, iters=1000, preconditioner="sparse")
                ms = (time.perf_counter() - started) * 1e3
                q10, q50, q90 = np.quantile(shares, [0.1, 0.5, 0.9])
                print(f"{n:5d} {d:4d} {eps:6g}  {q10:9.6f} {q50:9.6f} {q90:9.6f}    {1 - q50:9.2e}   "
                      f"{str(product.redone_in_float64):6s} {ms:9.1f}", flush=True)


if __name__ == "__main__":
    main()
