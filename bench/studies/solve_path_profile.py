#!/usr/bin/env python3
"""Where a Python solve's time goes on the GPU (issue 7: the suite's flashsinkhorn-py forward took
4.6 ms at n = 10,000, d = 64, where the C++ benchmark's 10 iterations take 1.5 ms).

For each n: the suite's forward (fs.sinkhorn on CUDA tensors, 10 iterations, tol 0), timed by CUDA
events (median of --repeats), then one call under torch.profiler (CUPTI sees our kernels too): the
GPU time of each kernel name, the GPU's busy time and the call's wall time, so that host gaps
(allocation, synchronisation, capture) show up as wall − busy. Also the Solver split: construction
(validation, device prepare), solve(), and primal_objective() (the pass that sinkhorn() no longer
runs). Then the same for the gradient of a solved call, `Solver.gradient_x()` (what the suite's
forward + gradient adds): CUDA events and one profiled call, its kernels (the plan pass, the staging
of the values, the epilogue) against the call's wall time.

    python3 bench/studies/solve_path_profile.py --ns 10000,50000 --d 64 --out profile.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "suite"))
import protocol  # noqa: E402

import flashsinkhorn as fs  # noqa: E402


def cuda_ms(call, repeats: int) -> list[float]:
    times = []
    for _ in range(repeats):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        call()
        stop.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(stop))
    return times


def wall_ms(call) -> float:
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    out = call()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) * 1e3, out


def profile_one(call) -> dict:
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        t0 = time.perf_counter()
        call()
        torch.cuda.synchronize()
        wall = (time.perf_counter() - t0) * 1e3
    kernels: dict[str, list[float]] = {}
    runtime: dict[str, list[float]] = {}  # CUDA runtime/driver API calls (CUPTI): host time each
    busy = 0.0
    for event in prof.events():
        if getattr(event, "device_type", None) == torch.autograd.DeviceType.CUDA:
            ms = event.device_time_total / 1e3 if hasattr(event, "device_time_total") else event.cuda_time_total / 1e3
            kernels.setdefault(event.name[:90], []).append(ms)
            busy += ms
        elif event.name.startswith("cu"):
            runtime.setdefault(event.name[:60], []).append(event.cpu_time_total / 1e3)
    table = sorted(((name, len(v), sum(v)) for name, v in kernels.items()), key=lambda r: -r[2])
    calls = sorted(((name, len(v), sum(v)) for name, v in runtime.items()), key=lambda r: -r[2])
    return {"wall_ms": wall, "gpu_busy_ms": busy,
            "kernels": [{"name": n, "count": c, "ms": round(t, 4)} for n, c, t in table[:25]],
            "runtime_calls": [{"name": n, "count": c, "host_ms": round(t, 4)} for n, c, t in calls[:25]],
            "runtime_host_ms": round(sum(t for _, _, t in calls), 4)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ns", default="10000,50000")
    ap.add_argument("--d", type=int, default=64)
    ap.add_argument("--precision", default="tf32")
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--data-dir", default="/tmp/fs_suite_data")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    rows = []
    for n in (int(float(v)) for v in args.ns.split(",")):
        case = protocol.Case(impl="flashsinkhorn-py", op="forward", n=n, d=args.d, precision=args.precision,
                             data_dir=args.data_dir)
        protocol.ensure_data(args.data_dir, n, args.d)
        x, y, a, b = (torch.as_tensor(v, dtype=torch.float32, device="cuda") for v in protocol.load_data(case))
        common = dict(eps=0.1, iters=10, tol=0, precision=args.precision)

        def forward():
            return fs.sinkhorn(x, y, a, b, **common)
        forward()  # warm-up: module load, kernel attributes
        times = cuda_ms(forward, args.repeats)
        construct_ms = statistics.median(wall_ms(lambda: fs.Solver(x, y, a, b, **common))[0]
                                         for _ in range(args.repeats))
        solver = fs.Solver(x, y, a, b, **common)
        solve_ms, result = wall_ms(solver.solve)
        primal_ms, _ = wall_ms(lambda: result.primal_cost)
        solved = forward().solver
        solved.gradient_x()  # warm-up
        gradient_times = cuda_ms(solved.gradient_x, args.repeats)
        row = {"n": n, "d": args.d, "precision": args.precision,
               "fp32_dots": os.environ.get("FLASHSINKHORN_FP32_DOTS", "3xtf32"), "sinkhorn_ms_median": statistics.median(times),
               "sinkhorn_ms_min": min(times), "solver_construct_ms": construct_ms, "solve_ms": solve_ms,
               "library_solve_seconds": result.seconds, "primal_objective_ms": primal_ms,
               "profile": profile_one(forward), "gradient_x_ms_median": statistics.median(gradient_times),
               "gradient_profile": profile_one(solved.gradient_x), "commit": protocol.commit(), "date": protocol.now(),
               "machine": protocol.machine(), "versions": protocol.versions()}
        rows.append(row)
        print(json.dumps({k: v for k, v in row.items() if k not in ("profile", "machine", "versions")}), flush=True)
        for k in row["profile"]["kernels"][:12]:
            print(f"   {k['ms']:9.4f} ms  x{k['count']:<3} {k['name']}", flush=True)
        for k in row["profile"]["runtime_calls"][:12]:
            print(f"   {k['host_ms']:9.4f} ms host  x{k['count']:<3} {k['name']}", flush=True)
        print(f"   wall {row['profile']['wall_ms']:.3f} ms, GPU busy {row['profile']['gpu_busy_ms']:.3f} ms, "
              f"CUDA API host time {row['profile']['runtime_host_ms']:.3f} ms", flush=True)
        gradient = row["gradient_profile"]
        print(f"   gradient_x: median {row['gradient_x_ms_median']:.3f} ms (CUDA events); profiled wall "
              f"{gradient['wall_ms']:.3f} ms, GPU busy {gradient['gpu_busy_ms']:.3f} ms", flush=True)
        for k in gradient["kernels"][:8]:
            print(f"   {k['ms']:9.4f} ms  x{k['count']:<3} {k['name']}", flush=True)
    if args.out:
        Path(args.out).write_text("".join(json.dumps(r) + "\n" for r in rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
