"""Sinkhorn iteration counts at the point where an Adam run stopped (its `final_theta`): cold
ε-scaled solves with ω = 'auto' and a fixed ω, and warm starts after perturbations of W, one JSON
line per solve. It measured why the n = 10⁵ Adam run with ω = 1.8 crawled at its loss plateau
(results/h200_n100000_probe_s23/: 11,170 cold iterations with ω = 1.8 against 4,190 with 'auto'):

  python3 examples/shuffled_regression/plateau_probe.py \
      examples/shuffled_regression/results/h200_n100000_adam_s22_segment1 --seconds 250 --out probe.jsonl

The data is the report's problem (n, seed); `--rows m` solves on m rows of X and of Y drawn at
random instead (the same distributions: a CPU-sized look at the same geometry).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch

import flashsinkhorn as fs

from regression_data import make_data


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("segment", type=Path, help="a run.py --out-dir whose Adam run kept final_theta")
    p.add_argument("--rows", type=int, default=0, help="solve on this many random rows (0: all n)")
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--precision", default=None, help="default: fp32 on CUDA, fp64 on the CPU")
    p.add_argument("--tol", type=float, default=6.4e-4, help="L1 marginal error (the stuck run's last solve's)")
    p.add_argument("--omega", type=float, default=1.8, help="the fixed over-relaxation compared with 'auto'")
    p.add_argument("--shifts", type=float, nargs="*", default=[0.2, 0.5, 1.0],
                   help="max_i |Δz_i| of the random perturbations of W for the warm starts")
    p.add_argument("--seconds", type=float, default=250, help="start no solve after this many seconds")
    p.add_argument("--out", type=Path, default=None, help="JSON lines (default: stdout only)")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> list[dict]:
    args = parse(argv)
    report = json.loads(next(args.segment.glob("shuffled_regression_n*.json")).read_text())
    config = report["config"]
    data = make_data(n=config["n"], noise=config["noise"], seed=config["seed"], init_seed=config["init_seed"])
    x, y = data.x, data.y
    if args.rows:
        pick = np.random.default_rng(5)
        x, y = x[pick.choice(len(x), args.rows, replace=False)], y[pick.choice(len(y), args.rows, replace=False)]
    w = np.asarray(report["adam"]["final_theta"], dtype=np.float64).reshape(config["d_x"], config["d_y"])
    precision = args.precision or ("fp32" if args.device == "cuda" else "fp64")
    dtype = torch.float32 if precision != "fp64" else torch.float64
    x64 = torch.as_tensor(x, device=args.device)
    y_t = torch.as_tensor(y, device=args.device).to(dtype).contiguous()
    deadline = time.perf_counter() + args.seconds
    rows: list[dict] = []
    out = None if args.out is None else args.out.open("a")

    def solve(tag: str, w_at: np.ndarray, omega, start=None):
        kwargs = dict(eps=config["eps"], tol=args.tol, iters=config.get("sinkhorn_iters", 20000), precision=precision,
                      relaxation=omega)
        kwargs.update(dict(initial_f=start.f, initial_g=start.g) if start is not None else dict(scaling=0.9))
        z = (x64 @ torch.as_tensor(w_at, device=args.device)).to(dtype).contiguous()
        began = time.perf_counter()
        result = fs.Solver(z, y_t, **kwargs).solve()
        row = dict(tag=tag, omega=omega, warm=start is not None, iterations=int(result.iterations),
                   converged=bool(result.converged), marginal_error=float(result.marginal_error),
                   value=float(result.cost), seconds=time.perf_counter() - began, rows=len(x), device=args.device,
                   precision=precision)
        print(json.dumps(row), flush=True)
        rows.append(row)
        if out is not None:
            out.write(json.dumps(row) + "\n")
            out.flush()
        return result

    base = solve("cold at final_theta", w, "auto")
    rng = np.random.default_rng(0)
    for shift in args.shifts:
        direction = rng.normal(size=w.shape)
        direction *= shift / np.abs(x @ direction).max()
        for warm in (True, False):
            if time.perf_counter() < deadline:
                solve(f"{'warm' if warm else 'cold'} at final_theta + dW, max|dz| = {shift}", w + direction, "auto",
                      start=base if warm else None)
    if time.perf_counter() < deadline:
        solve("cold at final_theta", w, args.omega)
    if out is not None:
        out.close()
    return rows


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
