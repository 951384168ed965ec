#!/usr/bin/env python3
"""Where the host time of a SamplesLoss forward + backward goes (issue 6: on the H200, forward +
backward on CUDA tensors costs 450–620 µs more than the C++ solve + gradient_x,
bench/results/python_call_overhead_2026-12-01_s12_call4_h200_cuda.json).

The call is the benchmark's: SamplesLoss(blur=√ε, scaling=None, debias=False, iters=10, tol=0,
solver='alternating') on x (requires grad) and y, then value.backward(). Timed, as medians of
--calls warm calls (wall clock; the device synchronised before each clock read, so the numbers are
the call's whole latency, the GPU's work included):
  sinkhorn        fs.sinkhorn(x.detach(), y, ...) — the plain solve, no autograd
  forward         loss(x, y) — the solve through the autograd Function
  backward        value.backward() — the engine, our backward (gradient_x, the scaling by the
                  incoming gradient) and the accumulation into x.grad
  gradient_x      result.solver.gradient_x() of the plain solve — the core's gradient pass as the
                  backward calls it, without the engine (backward − gradient_x: autograd's share)
  core            the library's own clock of the forward's solve (result.seconds)
and then one forward + backward under torch.profiler, its CPU operators by self time: the torch
operations our Python code launches, next to the autograd engine's own.

    python3 bench/studies/samplesloss_call_breakdown.py --device cuda --ns 1,1000 --out breakdown.jsonl
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "suite"))
import protocol  # noqa: E402

import flashsinkhorn as fs  # noqa: E402

EPS, ITERS = 0.1, 10


def timed(call, sync) -> float:
    """µs of one call, the device idle before and after."""
    sync()
    t0 = time.perf_counter()
    call()
    sync()
    return (time.perf_counter() - t0) * 1e6


def profile_table(call, device: str, rows: int) -> list[dict]:
    """One call under torch.profiler: the CPU operators by self time (µs)."""
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
    with profile(activities=activities) as prof:
        call()
    events = sorted(prof.key_averages(), key=lambda e: e.self_cpu_time_total, reverse=True)
    return [{"name": e.key, "calls": e.count, "self_cpu_us": round(e.self_cpu_time_total, 1),
             "cpu_us": round(e.cpu_time_total, 1)} for e in events[:rows]]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cuda", help="cuda or cpu")
    ap.add_argument("--ns", default="1,1000")
    ap.add_argument("--d", type=int, default=3)
    ap.add_argument("--precision", default="fp32")
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=30)
    ap.add_argument("--profile-rows", type=int, default=25)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    if args.device == "cuda" and not (torch.cuda.is_available() and fs._core.cuda_available()):
        print("samplesloss_call_breakdown: needs torch.cuda and a core built with CUDA; skipped", flush=True)
        return 0
    sync = torch.cuda.synchronize if args.device == "cuda" else (lambda: None)
    loss = fs.SamplesLoss("sinkhorn", p=2, blur=math.sqrt(EPS), scaling=None, debias=False, cost_scale=1.0,
                          solver="alternating", iters=ITERS, tol=0.0, device=args.device, precision=args.precision,
                          **({"threads": 1} if args.device == "cpu" else {}))
    generator = torch.Generator().manual_seed(0)
    rows = []
    for n in (int(float(v)) for v in args.ns.split(",")):
        x = torch.randn(n, args.d, generator=generator, dtype=torch.float64).float().to(args.device).requires_grad_()
        y = torch.randn(n, args.d, generator=generator, dtype=torch.float64).float().to(args.device)
        plain = dict(eps=EPS, iters=ITERS, tol=0, precision=args.precision,
                     **({"threads": 1} if args.device == "cpu" else {}))
        state = {}

        def forward():
            state["value"] = loss(x, y)

        def backward():
            state["value"].backward()
            x.grad = None

        def sinkhorn():
            state["plain"] = fs.sinkhorn(x.detach(), y, **plain)

        def gradient_x():
            state["plain"].solver.gradient_x()

        for _ in range(args.warmup):
            sinkhorn()
            forward()
            backward()
        samples = {"sinkhorn": [], "gradient_x": [], "forward": [], "backward": [], "core": []}
        for _ in range(args.calls):  # alternating, so that drift hits every step alike
            samples["sinkhorn"].append(timed(sinkhorn, sync))
            samples["gradient_x"].append(timed(gradient_x, sync))
            samples["forward"].append(timed(forward, sync))
            samples["core"].append(state["value"].grad_fn.solve.result.seconds * 1e6)
            samples["backward"].append(timed(backward, sync))

        def both():
            forward()
            backward()

        row = {"study": "samplesloss_call_breakdown", "device": args.device, "n": n, "d": args.d,
               "precision": args.precision, "calls": args.calls,
               "median_us": {k: round(statistics.median(v), 1) for k, v in samples.items()},
               "profile_forward_backward": profile_table(both, args.device, args.profile_rows),
               "commit": protocol.commit(), "date": protocol.now(), "machine": protocol.machine(),
               "versions": {"python": sys.version.split()[0], "torch": torch.__version__, "flashsinkhorn": fs.__version__}}
        rows.append(row)
        m = row["median_us"]
        print(f"n={n} d={args.d} {args.precision} {args.device}: sinkhorn {m['sinkhorn']:.1f} µs, its gradient_x "
              f"{m['gradient_x']:.1f}, forward {m['forward']:.1f}, backward {m['backward']:.1f}, core clock "
              f"{m['core']:.1f}", flush=True)
        for e in row["profile_forward_backward"][:12]:
            print(f"   {e['self_cpu_us']:9.1f} µs self  x{e['calls']:<3} {e['name'][:90]}", flush=True)
    if args.out:
        with open(args.out, "a") as sink:
            for row in rows:
                sink.write(json.dumps(row) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
