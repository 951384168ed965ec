#!/usr/bin/env python3
"""Which stage of the streamed HVP loses accuracy, per device and precision, on the shuffled
regression's points at W* (examples/shuffled_regression): the solve (potentials), the plan passes
(P·v, Pᵀ·u), the frozen-potential part of the HVP (plan passes only) and its implicit part (one CG
solve), each as the relative error against the CPU float64 result.

    python3 bench/studies/hvp_stage_errors.py --n 1000 --configs cpu:fp64 cpu:fp32 cuda:fp64 cuda:fp32

One JSON line per configuration on stdout. Written for the CUDA fp32 HVPs that did not converge at
this cost scale (examples/shuffled_regression/results/hessian_check_h200.jsonl).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "shuffled_regression"))

import flashsinkhorn as fs  # noqa: E402
from regression_data import make_data  # noqa: E402


def relative(a: torch.Tensor, b: torch.Tensor) -> float:
    a, b = a.detach().cpu().double(), b.detach().cpu().double()
    return float((a - b).norm() / b.norm().clamp_min(1e-300))


def gauge_free_error(got: dict, reference: dict) -> float:
    df, dg = got["f"] - reference["f"], got["g"] - reference["g"]
    t = 0.5 * (float(df.mean()) - float(dg.mean()))  # f − t, g + t: the least-squares gauge
    return max(float((df - t).abs().max()), float((dg + t).abs().max()))


def transpose_mismatch(got: dict, reference: dict, probes: dict) -> float:
    u, v = torch.as_tensor(probes["u"]), torch.as_tensor(probes["v"])
    forward = float(u @ got["plan_v"].detach().cpu().double())
    transpose = float(v @ got["plan_t_u"].detach().cpu().double())
    scale = abs(float(u @ reference["plan_v"].detach().cpu().double()))
    return abs(forward - transpose) / max(scale, 1e-300)


def stages(z: np.ndarray, y: np.ndarray, device: str, precision: str, probes: dict, args) -> dict:
    dtype = torch.float64 if precision == "fp64" else torch.float32
    t = lambda a: torch.as_tensor(a, dtype=dtype, device=device).contiguous()  # noqa: E731
    solver = fs.Solver(t(z), t(y), eps=args.eps, tol=args.sinkhorn_tol, iters=20000, precision=precision,
                       relaxation=args.relaxation, scaling=0.5, device=device)
    result = solver.solve()
    out = dict(device=device, precision=precision, iterations=int(result.iterations),
               marginal_error=float(result.marginal_error), converged=bool(result.converged), cost=float(result.cost),
               f=result.f.detach().cpu().double(), g=result.g.detach().cpu().double(),
               plan_v=solver.apply_plan(t(probes["v"])), plan_t_u=solver.apply_plan_transpose(t(probes["u"])))
    for part in ("fixed", "implicit", "full"):
        for preconditioner in args.preconditioners if part != "fixed" else ["diagonal"]:
            h = solver.hvp(t(probes["direction"]), part=part, tol=args.hvp_tol, iters=args.hvp_iters,
                           preconditioner=preconditioner)
            out[f"hvp_{part}_{preconditioner}"] = (h.product, int(h.cg_iterations), bool(h.converged))
    return out


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=1000)
    p.add_argument("--configs", nargs="+", default=["cpu:fp64", "cpu:fp32"])
    p.add_argument("--preconditioners", nargs="+", default=["diagonal", "sparse"])
    p.add_argument("--eps", type=float, default=0.05)
    p.add_argument("--sinkhorn-tol", type=float, default=3e-5)
    p.add_argument("--relaxation", type=float, default=1.8)
    p.add_argument("--hvp-tol", type=float, default=1e-6)
    p.add_argument("--hvp-iters", type=int, default=500)
    args = p.parse_args(argv)
    data = make_data(n=args.n)
    z = data.x @ data.w_star
    rng = np.random.default_rng(0)
    probes = dict(v=rng.standard_normal(args.n), u=rng.standard_normal(args.n),
                  direction=data.x @ rng.standard_normal(data.w_star.shape))
    reference = stages(z, data.y, "cpu", "fp64", probes, args)
    for config in args.configs:
        device, precision = config.split(":")
        got = stages(z, data.y, device, precision, probes, args)
        row = dict(n=args.n, device=device, precision=precision, iterations=got["iterations"],
                   marginal_error=got["marginal_error"], converged=got["converged"],
                   cost_relative=abs(got["cost"] - reference["cost"]) / abs(reference["cost"]),
                   f_max_error_over_eps=float((got["f"] - reference["f"]).abs().max()) / args.eps,
                   g_max_error_over_eps=float((got["g"] - reference["g"]).abs().max()) / args.eps,
                   # The same without the gauge (f + t, g − t leaves the plan unchanged): t fitted.
                   fg_gauge_free_max_error_over_eps=gauge_free_error(got, reference) / args.eps,
                   # uᵀ(P·v) against vᵀ(Pᵀ·u): do the x-rows and y-rows passes apply one matrix?
                   transpose_mismatch=transpose_mismatch(got, reference, probes),
                   plan_v=relative(got["plan_v"], reference["plan_v"]),
                   plan_t_u=relative(got["plan_t_u"], reference["plan_t_u"]),
                   cost_scale=float((z ** 2).sum(1).max() + (data.y ** 2).sum(1).max()))
        for key, value in got.items():
            if key.startswith("hvp_"):
                row[key] = dict(relative=relative(value[0], reference[key][0]), cg_iterations=value[1],
                                converged=value[2])
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
