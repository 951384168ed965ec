#!/usr/bin/env python3
"""Where one Solver.hvp spends its time: the backend calls FLASHSINKHORN_TRACE=1 prints, summed.

The suite's HVP case (suite_hvp_case.py: the suite's data, ε = 0.1, 50 Sinkhorn iterations, then
Solver.hvp along the suite's direction with the sparse preconditioner, CG to 2e-5). A warm-up product first (the kernels' and the
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

from suite_hvp_case import add_case_arguments, case_tensors, product, solved

LINE = re.compile(r"flashsinkhorn trace: (?P<call>.+?)\s+(?P<ms>[0-9.]+) ms\s+\(host (?P<host>[0-9.]+) ms before\)")


def traced_product(args) -> None:
    """The child: one warm-up and one traced product; the trace goes to stderr."""
    import torch

    x, y, a, b, direction = case_tensors(args)

    def traced():
        solver = solved(x, y, a, b, args.precision)
        print("=== hvp", file=sys.stderr, flush=True)
        started = time.perf_counter()
        result = product(solver, direction)
        if args.device == "cuda":
            torch.cuda.synchronize()
        return result, (time.perf_counter() - started) * 1e3

    traced()
    print("=== traced", file=sys.stderr, flush=True)
    result, ms = traced()
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
    add_case_arguments(parser, n=10000)
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
