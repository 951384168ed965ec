#!/usr/bin/env python3
"""Several Hessian-vector products of one solve: what each costs.

The suite's HVP case (bench/suite/drv_flashsinkhorn.py: its data, ε = 0.1, 50 Sinkhorn iterations,
the sparse preconditioner, CG to 2e-5), but `--products` products along the same direction on one
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
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "suite"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--d", type=int, default=64)
    parser.add_argument("--precision", default="fp32", choices=("fp64", "fp32", "tf32", "bf16", "fp16"))
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    parser.add_argument("--products", type=int, default=3)
    args = parser.parse_args()

    import torch

    import flashsinkhorn as fs
    from protocol import hvp_direction, make_data

    dtype = torch.float64 if args.precision == "fp64" else torch.float32
    x, y, a, b = (torch.as_tensor(v, device=args.device) for v in make_data(args.n, args.d))
    x, y = x.to(dtype), y.to(dtype)
    direction = torch.as_tensor(hvp_direction(args.n, args.d), dtype=dtype, device=args.device)
    solver = fs.Solver(x, y, a, b, eps=0.1, iters=50, tol=0, precision=args.precision)
    solver.solve()
    print(f"n = m = {args.n}, d = {args.d}, {args.precision}, {args.device}:")
    for k in range(args.products):
        started = time.perf_counter()
        product = solver.hvp(direction, tol=2e-5, iters=1000, preconditioner="sparse")
        if args.device == "cuda":
            torch.cuda.synchronize()
        ms = (time.perf_counter() - started) * 1e3
        print(f"  product {k + 1}: {ms:8.1f} ms, plan passes {product.plan_passes}, CG iterations "
              f"{product.cg_iterations}, redone in float64 {product.redone_in_float64}, "
              f"relative residual {product.relative_residual:.1e}")


if __name__ == "__main__":
    main()
