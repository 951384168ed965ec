#!/usr/bin/env python3
"""CPU plan passes against the half-step: what a gradient costs after a solve, in half-steps.

A point gradient is one plan pass, Σ_j P_ij·y_j: the softmin's scores and exponentials plus d
multiply-adds a score, so it should cost one to two half-steps. This times, on the CPU backend:
  half-step     Solver(x, y, eps, iters, tol=0).solve() wall time / (2·iters)
  gradient_x    solver.gradient_x() right after (the plan pass over x's rows; nothing cached)
  gradient_y    solver.gradient_y() likewise
  hvp           (--hvp) Solver(…, iters=200, tol=1e-6).solve(), then solver.hvp(v, tol=1e-4) with v ~ N(0, I):
                the CG's products are plan passes (plan_quadratic_rows and the vector passes); its CG
                iterations and plan passes are recorded, so builds that differ only in speed agree there
Axes (declared): (n = m, d) ∈ --sizes, float32 (fp32) and float64 (fp64), x, y ~ N(0, I) seed 0,
ε = 0.1, 10 iterations, --threads (default 1: the 2-core VM's second core stays out of the figure),
medians over --repeats fresh solvers.

Before/after A/Bs run the script once per package build (--label, PYTHONPATH pointing at each
build's python/ folder) into one --out file: rows carry the label and the package path.

  PYTHONPATH=build/python python3 bench/cpu_plan_pass_bench.py --label after --out FILE
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench" / "suite"))
import protocol  # noqa: E402  (the suite's CPU identity)


def timed(call) -> tuple[float, object]:
    start = time.perf_counter()
    out = call()
    return time.perf_counter() - start, out


def measure(fs, n: int, d: int, dtype, iters: int, threads: int, repeats: int) -> dict:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, d)).astype(dtype)
    y = rng.standard_normal((n, d)).astype(dtype)
    solve_s, grad_x_s, grad_y_s, norms = [], [], [], []
    for _ in range(repeats):
        solver = fs.Solver(x, y, eps=0.1, iters=iters, tol=0, threads=threads)
        seconds, _ = timed(solver.solve)
        solve_s.append(seconds)
        seconds, grad_x = timed(solver.gradient_x)
        grad_x_s.append(seconds)
        seconds, _ = timed(solver.gradient_y)
        grad_y_s.append(seconds)
        norms.append(float(np.linalg.norm(np.asarray(grad_x, dtype=np.float64))))
    half_step = statistics.median(solve_s) / (2 * iters)
    gx, gy = statistics.median(grad_x_s), statistics.median(grad_y_s)
    return {"op": "gradient", "n": n, "m": n, "d": d, "dtype": np.dtype(dtype).name, "iterations": iters, "threads": threads,
            "repeats": repeats, "half_step_ms": half_step * 1e3, "gradient_x_ms": gx * 1e3,
            "gradient_y_ms": gy * 1e3, "gradient_x_half_steps": gx / half_step,
            "gradient_y_half_steps": gy / half_step, "gradient_x_norm": statistics.median(norms)}


def measure_hvp(fs, n: int, d: int, dtype, threads: int) -> dict:
    rng = np.random.default_rng(0)
    x, y, v = (rng.standard_normal((n, d)).astype(dtype) for _ in range(3))
    solver = fs.Solver(x, y, eps=0.1, iters=200, tol=1e-6, threads=threads)
    solve_seconds, _ = timed(solver.solve)
    seconds, product = timed(lambda: solver.hvp(v, tol=1e-4, iters=500))
    return {"op": "hvp", "n": n, "m": n, "d": d, "dtype": np.dtype(dtype).name, "threads": threads,
            "solve_ms": solve_seconds * 1e3, "hvp_ms": seconds * 1e3, "cg_iterations": product.cg_iterations,
            "plan_passes": product.plan_passes, "hvp_norm": float(np.linalg.norm(np.asarray(product.product)))}


def cpu_model() -> str:
    """The CPU with its family and model (the suite's protocol.cpu_identity): the VMs of this project
    have moved between hosts (AMD family 23 = Zen 1 on 2026-12-02, family 25 = Zen 3 on 2026-12-05)."""
    cpu = protocol.cpu_identity()
    family, _, model = cpu.get("cpu_family_model", "?/?").partition("/")
    return f"{cpu.get('cpu_model', platform.processor())} (family {family}, model {model})"


def git_commit() -> str:
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO,
                               capture_output=True, text=True).stdout.strip()
        return head + (" + uncommitted changes" if dirty else "")
    except OSError:
        return "unknown"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="5000x3,5000x8,3000x64", help="n x d list")
    ap.add_argument("--dtypes", default="float32,float64")
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--hvp", default="", help="n x d list for the HVP rows (empty: none)")
    ap.add_argument("--label", default="", help="which build this is (before/after an A/B)")
    ap.add_argument("--out", default=None, help="append the rows (JSON lines) to this file")
    args = ap.parse_args()

    import flashsinkhorn as fs

    meta = {"benchmark": "cpu_plan_pass", "label": args.label, "package": str(Path(fs.__file__).parent),
            "commit": git_commit(), "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "machine": {"platform": platform.platform(), "cpu": cpu_model(), "cores": os.cpu_count(),
                        "python": platform.python_version()}}
    for size in filter(None, args.sizes.split(",")):
        n, d = (int(v) for v in size.split("x"))
        for dtype in args.dtypes.split(","):
            row = {**meta, **measure(fs, n, d, np.dtype(dtype), args.iters, args.threads, args.repeats)}
            print(f"{args.label or 'this build'}: n={n} d={d} {dtype}: half-step {row['half_step_ms']:.2f} ms, "
                  f"gradient_x {row['gradient_x_ms']:.2f} ms = {row['gradient_x_half_steps']:.1f} half-steps, "
                  f"gradient_y {row['gradient_y_ms']:.2f} ms", flush=True)
            write(args.out, row)
    for size in filter(None, args.hvp.split(",")):
        n, d = (int(v) for v in size.split("x"))
        for dtype in args.dtypes.split(","):
            row = {**meta, **measure_hvp(fs, n, d, np.dtype(dtype), args.threads)}
            print(f"{args.label or 'this build'}: n={n} d={d} {dtype}: hvp {row['hvp_ms']:.0f} ms "
                  f"({row['cg_iterations']} CG iterations, {row['plan_passes']} plan passes)", flush=True)
            write(args.out, row)


def write(path: str | None, row: dict) -> None:
    if path:
        with open(path, "a") as f:
            f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
