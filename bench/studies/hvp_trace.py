#!/usr/bin/env python3
"""Where one Solver.hvp spends its time: the backend calls FLASHSINKHORN_TRACE=1 prints, summed.

The suite's HVP case (bench/suite/drv_flashsinkhorn.py): the suite's data (protocol.make_data: x, y ~
N(0, I_d), random weights), ε = 0.1, 50 Sinkhorn iterations, then Solver.hvp along the suite's
direction with the sparse preconditioner, CG to 2e-5. A warm-up product first (the kernels' and the
replica's first-use costs), then one traced product: every backend call it makes is summed by name,
in the order first seen, with the host's time between calls. The trace's lines after the
replica's first call belong to the float64 redo (reports: redone_in_float64).

    FLASHSINKHORN_TRACE=1 PYTHONPATH=build-gpu/python python3 bench/studies/hvp_trace.py \
        --n 10000 --d 64 --precision fp32 --device cuda
(the script sets FLASHSINKHORN_TRACE itself when it is not set.)
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

SUITE = Path(__file__).resolve().parents[1] / "suite"
LINE = re.compile(r"flashsinkhorn trace: (?P<call>.+?)\s+(?P<ms>[0-9.]+) ms\s+\(host (?P<host>[0-9.]+) ms before\)")


def traced_product(args) -> None:
    """The child: one warm-up and one traced product; the trace goes to stderr."""
    import torch

    sys.path.insert(0, str(SUITE))
    import flashsinkhorn as fs
    from protocol import hvp_direction, make_data

    x, y, a, b = (torch.as_tensor(v, device=args.device) for v in make_data(args.n, args.d))
    dtype = torch.float64 if args.precision == "fp64" else torch.float32
    x, y = x.to(dtype), y.to(dtype)
    direction = torch.as_tensor(hvp_direction(args.n, args.d), dtype=dtype, device=args.device)

    def product():
        solver = fs.Solver(x, y, a, b, eps=0.1, iters=50, tol=0, precision=args.precision)
        solver.solve()
        print("=== hvp", file=sys.stderr, flush=True)
        started = time.perf_counter()
        result = solver.hvp(direction, tol=2e-5, iters=1000, preconditioner="sparse")
        if args.device == "cuda":
            torch.cuda.synchronize()
        return result, (time.perf_counter() - started) * 1e3

    product()
    print("=== traced", file=sys.stderr, flush=True)
    result, ms = product()
    print(f"=== product {ms:.1f} ms, CG iterations {result.cg_iterations}, plan passes {result.plan_passes}, "
          f"redone in float64 {result.redone_in_float64}, relative residual {result.relative_residual:.2e}",
          file=sys.stderr, flush=True)


def summarise(trace: str) -> list[str]:
    """The traced product's hvp calls summed by name (the k=… of a pass kept: its value columns)."""
    lines = trace.split("=== traced", 1)[-1].split("=== hvp", 1)[-1].splitlines()
    totals: dict[str, list[float]] = {}
    host = 0.0
    for line in lines:
        match = LINE.search(line)
        if not match:
            continue
        call = re.sub(r"\s+\(enqueue\)", "", match["call"])
        entry = totals.setdefault(call, [0, 0.0])
        entry[0] += 1
        entry[1] += float(match["ms"])
        host += float(match["host"])
    out = [f"{count:4d} × {call:<40s} {ms:10.2f} ms" for call, (count, ms) in totals.items()]
    out.append(f"host time between calls: {host:.2f} ms")
    out += [line for line in lines if line.startswith("=== product")]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=10000)
    parser.add_argument("--d", type=int, default=64)
    parser.add_argument("--precision", default="fp32", choices=("fp64", "fp32", "tf32", "bf16", "fp16"))
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        traced_product(args)
        return
    env = dict(os.environ, FLASHSINKHORN_TRACE="1")
    child = subprocess.run([sys.executable, __file__, "--child", *sys.argv[1:]], env=env, capture_output=True,
                           text=True, check=False)
    if child.returncode != 0:
        sys.exit(f"hvp_trace: the traced product failed (exit {child.returncode}):\n{child.stderr[-3000:]}")
    print(f"n = m = {args.n}, d = {args.d}, {args.precision}, {args.device}:")
    print("\n".join(summarise(child.stderr)))


if __name__ == "__main__":
    main()
