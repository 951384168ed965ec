#!/usr/bin/env python3
"""λ_min and λ_max of H_W = ∇²_W L at W* by Lanczos on the streamed HVP, per device, precision, preconditioner.

    python3 examples/shuffled_regression/hessian_check.py --n 10000 --devices cpu cuda --precisions fp32 fp64

At W* the Hessian is positive definite (λ ≈ 0.08 … 113 at n = 1000, CPU fp64), and L is a mean over
the points, so these are nearly n-independent: a precision whose HVPs (an implicit solve by CG) cannot
reach `--hvp-tol` shows here as CG failures and eigenvalues far outside that range, before a hybrid
run trusts its λ_min checks to them. One JSON line per (device, precision, preconditioner) on stdout: λ_min, λ_max,
the Ritz residual, every HVP's CG iterations and convergence, the HVPs' seconds and in all.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from regression_data import make_data  # noqa: E402
from regression_loss import ShuffledRegressionLoss  # noqa: E402


def check(data, device: str, precision: str, preconditioner: str, args: argparse.Namespace) -> dict:
    loss = ShuffledRegressionLoss(data.x, data.y, args.eps, device=device, tol=args.sinkhorn_tol,
                                  iters=args.sinkhorn_iters, precision=precision, relaxation=args.relaxation,
                                  hvp_tol=args.hvp_tol, preconditioner=preconditioner)
    started = time.perf_counter()
    r = loss.lambda_min(data.w_star.ravel(), max_steps=args.lanczos_steps or loss.d_x * loss.d_y, tol=1e-6)
    hvps = [e for e in loss.record if e.kind == "hvp"]
    return dict(n=args.n, device=device, precision=precision, preconditioner=preconditioner, lambda_min=r.lambda_min, lambda_max=r.lambda_max,
                residual=r.residual_min, lanczos_steps=r.steps, hvp_cg_iterations=[e.iterations for e in hvps],
                hvp_converged=[e.converged for e in hvps], hvp_seconds=sum(e.seconds for e in hvps),
                seconds=time.perf_counter() - started,
                sinkhorn_tol=args.sinkhorn_tol, hvp_tol=args.hvp_tol)


def main(argv: list[str] | None = None) -> list[dict]:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=1000)
    p.add_argument("--devices", nargs="+", default=["cpu"])
    p.add_argument("--precisions", nargs="+", choices=("fp32", "fp64"), default=["fp64"])
    p.add_argument("--preconditioners", nargs="+", choices=("none", "diagonal", "sparse"), default=["sparse"])
    p.add_argument("--eps", type=float, default=0.05)
    p.add_argument("--sinkhorn-tol", type=float, default=3e-5)
    p.add_argument("--sinkhorn-iters", type=int, default=20000)
    p.add_argument("--relaxation", type=float, default=1.8)
    p.add_argument("--hvp-tol", type=float, default=1e-6)
    p.add_argument("--lanczos-steps", type=int, default=0,
                   help="Lanczos steps (Hessian products); 0: d_x·d_y, the exact spectrum. Fewer time the products at large n.")
    args = p.parse_args(argv)
    data = make_data(n=args.n)
    rows = []
    for device in args.devices:
        for precision in args.precisions:
            for preconditioner in args.preconditioners:
                rows.append(check(data, device, precision, preconditioner, args))
                print(json.dumps(rows[-1]), flush=True)
    return rows


if __name__ == "__main__":
    main()
