#!/usr/bin/env python3
"""The suite's HVP product under each CG preconditioner: is S_k worth its inner solve on blurry plans?

The suite's HVP case (suite_hvp_case.py: its data, ε = 0.1, 50 Sinkhorn iterations, CG to 2e-5
within 1,000 iterations), one solve a case, then `--repeats` products along the suite's direction
with each of `--preconditioners` in turn (the first product of each is a warm-up, not kept). Prints
and writes (`--out`, JSON) the median product time, CG iterations, plan passes and residual.
Why: at d = 3 the plan is blurry (its largest entry holds 16% of a row on average) and the top-8
S_k saved ~20% of the outer iterations in the dense study (sparse_schur_preconditioner.py), while
each outer iteration also runs the inner Jacobi CG on S_k (docs/cuda_backend.md, session 56).

    PYTHONPATH=build/python python3 bench/studies/hvp_preconditioners.py --n 2000 --d 3
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from suite_hvp_case import add_case_arguments, case_tensors, product, solved


def timed_products(solver, direction, preconditioner: str, repeats: int, device: str) -> dict:
    """The median of `repeats` timed products after one warm-up, and the last product's report."""
    import torch

    product(solver, direction, preconditioner)
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        result = product(solver, direction, preconditioner)
        if device == "cuda":
            torch.cuda.synchronize()
        times.append((time.perf_counter() - started) * 1e3)
    return {"preconditioner": preconditioner, "ms": statistics.median(times), "ms_all": times,
            "cg_iterations": result.cg_iterations, "plan_passes": result.plan_passes,
            "relative_residual": result.relative_residual, "redone_in_float64": result.redone_in_float64,
            "product_norm": float(result.product.norm())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_case_arguments(parser, n=2000)
    parser.add_argument("--preconditioners", default="sparse,diagonal")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")

    from protocol import commit, machine  # commit(): FS_COMMIT where set (the device has no .git)

    x, y, a, b, direction = case_tensors(args)
    solver = solved(x, y, a, b, args.precision)
    print(f"n = m = {args.n}, d = {args.d}, {args.precision}, {args.device}:")
    rows = []
    for preconditioner in args.preconditioners.split(","):
        row = timed_products(solver, direction, preconditioner, args.repeats, args.device)
        rows.append(row)
        print(f"  {preconditioner:>9}: {row['ms']:8.2f} ms, CG iterations {row['cg_iterations']}, plan passes "
              f"{row['plan_passes']}, residual {row['relative_residual']:.1e}, float64 {row['redone_in_float64']}")
    if args.out:
        record = {"study": "bench/studies/hvp_preconditioners.py", "command": " ".join(sys.argv),
                  "commit": commit(), "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                  "machine": machine(), "n": args.n, "d": args.d, "precision": args.precision,
                  "device": args.device, "rows": rows}
        args.out.write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
