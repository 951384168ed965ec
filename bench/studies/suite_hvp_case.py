"""The suite's HVP case (bench/suite/drv_flashsinkhorn.py) for the studies that time it apart
(hvp_trace.py, repeated_hvp.py): the suite's data (protocol.make_data: x, y ~ N(0, I_d), random
weights), ε = 0.1, HVP_ITERS (50) Sinkhorn iterations, then Solver.hvp along the suite's direction
with the sparse preconditioner, CG to HVP_CG_TOL (2e-5) within 1,000 iterations."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "suite"))

EPS = 0.1


def add_case_arguments(parser: argparse.ArgumentParser, n: int) -> None:
    """--n (default `n`), --d, --precision, --device."""
    parser.add_argument("--n", type=int, default=n)
    parser.add_argument("--d", type=int, default=64)
    parser.add_argument("--precision", default="fp32", choices=("fp64", "fp32", "tf32", "bf16", "fp16"))
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))


def case_tensors(args: argparse.Namespace) -> tuple[Any, Any, Any, Any, Any]:
    """(x, y, a, b, direction) as torch tensors on args.device: points and direction in float64 for
    fp64, float32 otherwise; weights float64."""
    import torch

    from protocol import hvp_direction, make_data

    dtype = torch.float64 if args.precision == "fp64" else torch.float32
    x, y, a, b = (torch.as_tensor(v, device=args.device) for v in make_data(args.n, args.d))
    direction = torch.as_tensor(hvp_direction(args.n, args.d), dtype=dtype, device=args.device)
    return x.to(dtype), y.to(dtype), a, b, direction


def solved(x: Any, y: Any, a: Any, b: Any, precision: str) -> Any:
    """A Solver of the case, solved."""
    import flashsinkhorn as fs
    from protocol import HVP_ITERS

    solver = fs.Solver(x, y, a, b, eps=EPS, iters=HVP_ITERS, tol=0, precision=precision)
    solver.solve()
    return solver


def product(solver: Any, direction: Any, preconditioner: str = "sparse") -> Any:
    """The case's Solver.hvp (another `preconditioner` for hvp_preconditioners.py)."""
    from drv_flashsinkhorn import HVP_CG_TOL

    return solver.hvp(direction, tol=HVP_CG_TOL, iters=1000, preconditioner=preconditioner)
