#!/usr/bin/env python3
"""What the gradient adds to a Python call on CUDA tensors, without a profiler (issue 7: at n = 10⁴ the
suite's forward + gradient, 2.7–2.8 ms on the H100, is ~0.85 ms above the forward alone for a gradient
kernel of ~0.14 ms; bench/studies/call_timeline.py saw the host busy in between, but under
torch.profiler with Python stacks, which slows every host step).

On the suite's inputs (bench/suite/protocol.py: x, y ~ N(0, I), weights U[0,1)+0.1 normalised, ε = 0.1,
10 iterations, tol 0), each row is the median over --calls of a synchronised wall time
(torch.cuda.synchronize() before and after), with the GPU span of the same call by CUDA events:

  forward            sinkhorn(x, y, a, b).cost, x not requiring grad (the CUDA short path)
  forward_tracked    sinkhorn(xg, y, a, b).cost, xg requiring grad (the autograd Function's forward)
  forward_gradient   forward_tracked, then torch.autograd.grad(cost, xg): the suite's call
  backward           torch.autograd.grad(cost, xg) alone, after a synchronised forward_tracked
  gradient_x         Solver.gradient_x() of a solved short-path result, alone (the package's gradient
                     call: a new (n, d) tensor, the core's plan pass, epilogue and copy)
  engine             torch.autograd.grad of (xg * 1).sum() w.r.t. xg: the autograd engine's fixed cost
                     for one node (the CUDA device thread's hand-off included)

The rows alternate call by call, so that drift hits all. The sum forward_tracked + backward should be
close to forward_gradient; backward − gradient_x is the autograd machinery around our gradient.

    python3 bench/studies/gradient_call_breakdown.py --sizes 10000x8,10000x3 --precisions tf32,fp32 --out rows.jsonl
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "suite"))
import protocol  # noqa: E402

import flashsinkhorn as fs  # noqa: E402
from flashsinkhorn import _core  # noqa: E402

ROWS = ("forward", "forward_tracked", "forward_gradient", "backward", "gradient_x", "engine")


def timed(call, before=None) -> tuple[float, float]:
    """(wall µs, GPU µs) of call(): synchronised on both sides, CUDA events around it. `before` runs
    untimed first (its work finished before the clock starts)."""
    if before is not None:
        before()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    t0 = time.perf_counter_ns()
    start.record()
    call()
    stop.record()
    torch.cuda.synchronize()
    wall = (time.perf_counter_ns() - t0) / 1e3
    return wall, start.elapsed_time(stop) * 1e3


def measure(n: int, d: int, precision: str, data_dir: str, warmup: int, calls: int) -> dict:
    case = protocol.Case(impl="flashsinkhorn-py", op="forward_gradient", n=n, d=d, precision=precision,
                         data_dir=data_dir)
    protocol.set_torch_tf32(precision)
    x, y, a, b = (torch.as_tensor(v, dtype=torch.float32, device="cuda") for v in protocol.load_data(case))
    xg = x.clone().requires_grad_(True)
    common = dict(eps=case.eps, iters=case.iters, tol=0, precision=precision)
    held = {}

    def forward_tracked():
        held["cost"] = fs.sinkhorn(xg, y, a, b, **common).cost

    def backward():
        torch.autograd.grad(held.pop("cost"), xg)

    def solve_plain():
        held["result"] = fs.sinkhorn(x, y, a, b, **common)

    steps = {
        "forward": (lambda: fs.sinkhorn(x, y, a, b, **common).cost, None),
        "forward_tracked": (forward_tracked, None),
        "forward_gradient": (lambda: torch.autograd.grad(fs.sinkhorn(xg, y, a, b, **common).cost, xg), None),
        "backward": (backward, forward_tracked),
        "gradient_x": (lambda: held["result"].solver.gradient_x(), solve_plain),
        "engine": (lambda: torch.autograd.grad((xg * 1).sum(), xg), None),
    }
    samples = {name: ([], []) for name in ROWS}
    for k in range(warmup + calls):
        for name in ROWS:
            call, before = steps[name]
            wall, gpu = timed(call, before)
            held.clear()
            if k >= warmup:
                samples[name][0].append(wall)
                samples[name][1].append(gpu)
    row = {"study": "gradient_call_breakdown", "n": n, "d": d, "precision": precision, "calls": calls,
           "wall_us_median": {k: round(statistics.median(v[0]), 1) for k, v in samples.items()},
           "gpu_us_median": {k: round(statistics.median(v[1]), 1) for k, v in samples.items()},
           "commit": protocol.commit(), "date": protocol.now(), "machine": protocol.machine(),
           "versions": protocol.versions()}
    wall, gpu = row["wall_us_median"], row["gpu_us_median"]
    row["derived_us"] = {
        "gradient_over_forward": round(wall["forward_gradient"] - wall["forward"], 1),
        "tracked_over_forward": round(wall["forward_tracked"] - wall["forward"], 1),
        "backward_over_gradient_x": round(wall["backward"] - wall["gradient_x"], 1),
        "gradient_x_host_over_gpu": round(wall["gradient_x"] - gpu["gradient_x"], 1),
    }
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10000x8,10000x3", help="n x d, comma-separated")
    ap.add_argument("--precisions", default="tf32,fp32")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--calls", type=int, default=40)
    ap.add_argument("--data-dir", default="/tmp/fs_suite_data")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    if not torch.cuda.is_available() or not _core.cuda_available():
        print("gradient_call_breakdown: needs torch.cuda and a core built with CUDA; skipped", flush=True)
        return 0
    rows = []
    for size in args.sizes.split(","):
        n, d = (int(float(v)) for v in size.split("x"))
        for precision in args.precisions.split(","):
            row = measure(n, d, precision, args.data_dir, args.warmup, args.calls)
            rows.append(row)
            print(f"n={n} d={d} {precision}: median µs, wall / GPU span", flush=True)
            for name in ROWS:
                print(f"   {name:17s} {row['wall_us_median'][name]:9.1f} / {row['gpu_us_median'][name]:9.1f}", flush=True)
            print("   derived: " + ", ".join(f"{k} {v:.1f}" for k, v in row["derived_us"].items()), flush=True)
    if args.out:
        Path(args.out).write_text("".join(json.dumps(r) + "\n" for r in rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
