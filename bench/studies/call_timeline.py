#!/usr/bin/env python3
"""When the GPU waits during one Python call (issue 7: at n = 10,000 the suite's forward + gradient took
2.8 ms on the H100 where the C++ plan benchmark's 10 iterations + gradient pass take 1.55 ms).

For each operation (forward: sinkhorn(...) on CUDA tensors; forward_gradient: the suite's
sinkhorn(...).cost then torch.autograd.grad w.r.t. x), after --warmup calls, --calls calls run under
torch.profiler with CPU and CUDA activities and Python stacks. The Chrome trace (gzipped) is kept for
reading by hand, and a summary is computed from it:

  wall_us            the call's host span (the first to the last event of the call's range)
  gpu_busy_us        the union of the kernels' and copies' intervals on the device
  gaps               every interval of at least --gap-us where the device ran nothing, with the CUDA
                     runtime calls the host made then, the innermost Python frames active at its
                     middle and the longest Python calls that began inside it (what the host was
                     doing while the GPU waited)
  by_frame           the gaps' total per innermost Python frame

    python3 bench/studies/call_timeline.py --n 10000 --d 8 --precision tf32 --out-dir /tmp/timeline
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "suite"))
import protocol  # noqa: E402

import flashsinkhorn as fs  # noqa: E402

DEVICE_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset")


def union_length(intervals: list[tuple[float, float]]) -> float:
    total, end = 0.0, float("-inf")
    for start, stop in sorted(intervals):
        if stop <= end:
            continue
        total += stop - max(start, end)
        end = stop
    return total


def idle_gaps(intervals: list[tuple[float, float]], begin: float, finish: float, least: float):
    """The intervals of [begin, finish] covered by none of `intervals`, at least `least` long."""
    gaps, cursor = [], begin
    for start, stop in sorted(intervals):
        if start - cursor >= least:
            gaps.append((cursor, start))
        cursor = max(cursor, stop)
    if finish - cursor >= least:
        gaps.append((cursor, finish))
    return gaps


def innermost_frames(python_events: list[dict], at: float, depth: int = 4) -> list[str]:
    """The `depth` innermost Python frames whose span contains `at` (shortest spans first)."""
    active = [e for e in python_events if e["ts"] <= at <= e["ts"] + e["dur"]]
    active.sort(key=lambda e: e["dur"])
    return [e["name"][:110] for e in active[:depth]]


def summarise(trace: dict, call_range: str, least_gap_us: float) -> list[dict]:
    events = [e for e in trace.get("traceEvents", []) if e.get("ph") == "X"]
    ranges = sorted((e for e in events if e.get("name") == call_range), key=lambda e: e["ts"])
    python_events = [e for e in events if e.get("cat") == "python_function"]
    runtime = [e for e in events if e.get("cat") in ("cuda_runtime", "cuda_driver")]
    device = [e for e in events if e.get("cat") in DEVICE_CATEGORIES]
    calls = []
    for r in ranges:
        begin, finish = r["ts"], r["ts"] + r["dur"]
        inside = [(e["ts"], e["ts"] + e["dur"]) for e in device if begin <= e["ts"] <= finish]
        gaps = []
        for start, stop in idle_gaps(inside, begin, finish, least_gap_us):
            api = [e["name"] for e in runtime if start <= e["ts"] <= stop]
            started = sorted((e for e in python_events if start <= e["ts"] <= stop), key=lambda e: -e["dur"])
            gaps.append({"at_us": round(start - begin, 1), "us": round(stop - start, 1),
                         "frames": innermost_frames(python_events, (start + stop) / 2),
                         "started": [f"{e['name'][:90]} ({e['dur']:.0f} us)" for e in started[:6]],
                         "runtime_calls": api[:12],
                         "runtime_call_count": len(api)})
        by_frame: dict[str, float] = {}
        for gap in gaps:
            key = gap["frames"][0] if gap["frames"] else "(no Python frame)"
            by_frame[key] = by_frame.get(key, 0.0) + gap["us"]
        kernels: dict[str, list[float]] = {}
        for e in device:
            if begin <= e["ts"] <= finish:
                kernels.setdefault(e["name"][:80], []).append(e["dur"])
        calls.append({"wall_us": round(r["dur"], 1), "gpu_busy_us": round(union_length(inside), 1),
                      "gap_total_us": round(sum(g["us"] for g in gaps), 1), "gaps": gaps,
                      "by_frame": sorted(([k, round(v, 1)] for k, v in by_frame.items()), key=lambda kv: -kv[1]),
                      "device_work": sorted(([k, len(v), round(sum(v), 1)] for k, v in kernels.items()),
                                            key=lambda r: -r[2])})
    return calls


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=10000)
    ap.add_argument("--d", type=int, default=8)
    ap.add_argument("--precision", default="tf32")
    ap.add_argument("--ops", default="forward,forward_gradient")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--calls", type=int, default=3)
    ap.add_argument("--gap-us", type=float, default=4.0)
    ap.add_argument("--data-dir", default="/tmp/fs_suite_data")
    ap.add_argument("--out-dir", required=True)
    args = ap.parse_args()
    from torch.profiler import ProfilerActivity, profile, record_function

    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    case = protocol.Case(impl="flashsinkhorn-py", op="forward", n=args.n, d=args.d, precision=args.precision,
                         data_dir=args.data_dir)
    protocol.ensure_data(args.data_dir, args.n, args.d)
    protocol.set_torch_tf32(args.precision)
    x, y, a, b = (torch.as_tensor(v, dtype=torch.float32, device="cuda") for v in protocol.load_data(case))
    xg = x.clone().requires_grad_(True)
    common = dict(eps=0.1, iters=10, tol=0, precision=args.precision)

    def forward():
        return fs.sinkhorn(x, y, a, b, **common)

    def forward_gradient():
        value = fs.sinkhorn(xg, y, a, b, **common).cost
        return torch.autograd.grad(value, xg)

    summary = {"n": args.n, "d": args.d, "precision": args.precision, "commit": protocol.commit(),
               "date": protocol.now(), "machine": protocol.machine(), "versions": protocol.versions(), "ops": {}}
    for op in args.ops.split(","):
        call = {"forward": forward, "forward_gradient": forward_gradient}[op]
        for _ in range(args.warmup):
            call()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], with_stack=True) as prof:
            for _ in range(args.calls):
                with record_function("timed_call"):
                    call()
                    torch.cuda.synchronize()
        trace_path = out / f"timeline_{op}_{args.n}x{args.d}_{args.precision}.json"
        prof.export_chrome_trace(str(trace_path))
        trace = json.loads(trace_path.read_text())
        with gzip.open(str(trace_path) + ".gz", "wt") as packed:
            json.dump(trace, packed)
        trace_path.unlink()
        calls = summarise(trace, "timed_call", args.gap_us)
        summary["ops"][op] = calls
        for k, c in enumerate(calls):
            print(f"{op} call {k}: wall {c['wall_us']:.0f} us, GPU busy {c['gpu_busy_us']:.0f} us, "
                  f"gaps ≥ {args.gap_us:g} us: {c['gap_total_us']:.0f} us in {len(c['gaps'])}", flush=True)
        for frame, us in (calls[-1]["by_frame"] if calls else [])[:12]:
            print(f"    {us:8.1f} us  {frame}", flush=True)
    (out / f"timeline_{args.n}x{args.d}_{args.precision}.json").write_text(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
