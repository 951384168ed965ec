"""flash-sinkhorn's streamed HVP on the issue's protocol, with what its CG actually reached.

    python3 bench/hvp_peer.py X.npy Y.npy DIR.npy OUT_PREFIX [--eps 0.1] [--iters 50] [--tf32]

Runs flash_sinkhorn.hvp_x_sqeuclid (its Sinkhorn on eps_list = [eps]·iters, then the HVP: CG on
the Tikhonov-shifted Schur complement, its defaults tau2 = 1e-5, rtol = atol = 1e-6, at most 300
iterations), uniform weights, cost ‖x − y‖². Timed with CUDA events after one warm-up call (its
Triton autotuning). Prints one JSON object (ms, CG iterations, the relative residual its CG
reached, ‖r_k‖/‖r₀‖) and saves the product to OUT_PREFIX.npy for bench/hvp_bench.sh to compare
with ours. Also timed alone, the same way: its forward (sinkhorn_prelast_potentials_sqeuclid, the
first step of hvp_x_sqeuclid, same arguments): ms_forward, and ms_hvp_only = the difference of the
medians, the HVP without its forward (what `flashsinkhorn hvp`'s hvp_seconds measures).
"""
from __future__ import annotations

import argparse
import json
import time

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("x")
    ap.add_argument("y")
    ap.add_argument("direction")
    ap.add_argument("out_prefix")
    ap.add_argument("--eps", type=float, default=0.1)
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--tf32", action="store_true")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()

    import torch
    import flash_sinkhorn
    from flash_sinkhorn import hvp_x_sqeuclid
    from flash_sinkhorn.hvp import sinkhorn_prelast_potentials_sqeuclid

    dev = torch.device("cuda")
    x, y, direction = (torch.as_tensor(np.load(p), device=dev, dtype=torch.float32)
                       for p in (args.x, args.y, args.direction))
    n, m = x.shape[0], y.shape[0]
    a = torch.full((n,), 1.0 / n, device=dev)
    b = torch.full((m,), 1.0 / m, device=dev)
    eps_list = [args.eps] * args.iters

    def call():
        return hvp_x_sqeuclid(x, y, a, b, direction, eps_list=eps_list, allow_tf32=args.tf32)

    t0 = time.perf_counter()
    call()
    torch.cuda.synchronize()
    first_ms = (time.perf_counter() - t0) * 1e3
    times = []
    for _ in range(args.repeats):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        hvp, info = call()
        stop.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(stop))
    forward_times = []
    for _ in range(args.repeats):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        sinkhorn_prelast_potentials_sqeuclid(x, y, a, b, eps_list=eps_list, allow_tf32=args.tf32)
        stop.record()
        torch.cuda.synchronize()
        forward_times.append(start.elapsed_time(stop))
    np.save(args.out_prefix + ".npy", hvp.double().cpu().numpy())
    print(json.dumps({
        "impl": "flash-sinkhorn", "version": flash_sinkhorn.__version__, "n": n, "m": m, "d": x.shape[1],
        "eps": args.eps, "sinkhorn_iterations": args.iters, "allow_tf32": args.tf32,
        "config": "hvp_x_sqeuclid defaults: tau2 1e-5, cg_rtol 1e-6, cg_atol 1e-6, max_cg_iter 300, no preconditioner",
        "ms_forward_hvp": float(np.median(times)), "ms_min_forward_hvp": float(np.min(times)), "ms_first_call": first_ms,
        "ms_forward": float(np.median(forward_times)),
        "ms_hvp_only": float(np.median(times) - np.median(forward_times)),
        "cg_iterations": int(info.cg_iters), "cg_converged": bool(info.cg_converged),
        "cg_relative_residual": float(info.cg_residual) / max(float(info.cg_initial_residual), 1e-300),
        "hvp_norm": float(hvp.double().norm()),
    }))


if __name__ == "__main__":
    main()
