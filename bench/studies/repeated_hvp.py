#!/usr/bin/env python3
"""Several Hessian-vector products of one solve: what each costs.

The suite's HVP case (suite_hvp_case.py: its data, ε = 0.1, 50 Sinkhorn iterations, the sparse
preconditioner, CG to 2e-5), but `--products` products along the same direction on one
Solver — as torch.func.hessian or a double backward replayed on one graph make them. Where the
first product's single-precision CG falls short, it is redone in float64 and the later ones start
there (core/float64_replica.hpp): their time, plan passes and CG iterations show the attempt saved.

    PYTHONPATH=build/python python3 bench/studies/repeated_hvp.py --n 1000 --d 64 --precision fp32
VM (2 cores), 2026-12-07, 39c38a3: 132 ms (36 passes, 7 CG iterations), then 77 ms (21, 5).
H100, 2026-12-07, the tree of 2709281 (`--n 10000 --d 64 --device cuda`): tf32 166, then 137 ms
(30 → 21 passes); fp32 185, then 136 ms (38 → 21 passes, 9 → 5 CG iterations).
"""

from __future__ import annotations

import argparse
import time

from suite_hvp_case import add_case_arguments, case_tensors, product, solved


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_case_arguments(parser, n=1000)
    parser.add_argument("--products", type=int, default=3)
    args = parser.parse_args()

    import torch

    x, y, a, b, direction = case_tensors(args)
    solver = solved(x, y, a, b, args.precision)
    print(f"n = m = {args.n}, d = {args.d}, {args.precision}, {args.device}:")
    for k in range(args.products):
        started = time.perf_counter()
        result = product(solver, direction)
        if args.device == "cuda":
            torch.cuda.synchronize()
        ms = (time.perf_counter() - started) * 1e3
        print(f"  product {k + 1}: {ms:8.1f} ms, plan passes {result.plan_passes}, CG iterations "
              f"{result.cg_iterations}, redone in float64 {result.redone_in_float64}, "
              f"relative residual {result.relative_residual:.1e}")


if __name__ == "__main__":
    main()
