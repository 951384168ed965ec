#!/usr/bin/env python3
"""The floor under a Python call at n = m = 1,000: what the smallest steps any such call must take cost
when the caches are cold, next to their warm cost.

bench/python_cold_call_probe.py shows that a sinkhorn() call's work outside the core's clock costs
~5 µs back to back but several times that after any pause of milliseconds — a C loop that touches
almost no memory included — which is what every call after an n = 1,000 solve meets. This probe times
steps that cannot be removed from such a call, each alone, after a ~20 ms C loop (cold) and right
after itself (warm):
  clock_reads        two perf_counter reads around nothing (what the measurement itself costs)
  python_call        a Python function with sinkhorn()'s parameters (empty body), called as the
                     benchmark calls sinkhorn()
  binding_call       one call into the extension (_core.version())
  result_object      a SinkhornResult (the result dataclass) from ready values
  numpy_array        one NumPy array made from Python (np.empty)
  torch_from_numpy   one torch.from_numpy (what gives torch callers their tensors)
  torch_to_dlpack    one torch.utils.dlpack.to_dlpack (how CPU tensors reach the binding)
A step's cold time includes the clock reads' own cold cost (reported as clock_reads).

Run: PYTHONPATH=build/python python3 bench/python_cold_floor_probe.py [--repeats 40] [--out FILE]
Writes bench/results/python_cold_floor_<date>.json by default.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import hashlib
import inspect
import json
import platform
import subprocess
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent


def c_loop_calibrated(seconds: float) -> int:
    """PBKDF2 rounds that take about `seconds` here: one C loop over a few hundred bytes of state."""
    t0 = time.perf_counter()
    hashlib.pbkdf2_hmac("sha256", b"k", b"s", 2000)
    return max(1, int(2000 * seconds / (time.perf_counter() - t0)))


def empty_function_like(function):
    """A function with `function`'s parameters (annotations dropped) and an empty body."""
    signature = inspect.signature(function)
    parameters = [p.replace(annotation=inspect.Parameter.empty) for p in signature.parameters.values()]
    text = str(signature.replace(parameters=parameters, return_annotation=inspect.Signature.empty))
    namespace: dict = {}
    exec(f"def empty{text}:\n    return None\n", namespace)  # noqa: S102 (a signature, no user input)
    return namespace["empty"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=40, help="cold samples per step")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()

    import torch
    from torch.utils.dlpack import to_dlpack

    import flashsinkhorn as fs
    from flashsinkhorn import _core
    from flashsinkhorn._functional import SinkhornResult

    f32 = np.zeros(1000, np.float32)
    tensor = torch.zeros(1000, 3, dtype=torch.float32)
    kw = dict(eps=0.1, iters=10, tol=0.0, threads=1, device="cpu", solver="alternating")
    like_sinkhorn = empty_function_like(fs.sinkhorn)
    steps = {
        "clock_reads": lambda: None,
        "python_call": lambda: like_sinkhorn(f32, f32, **kw),
        "binding_call": _core.version,
        "result_object": lambda: SinkhornResult(f32, f32, 1.0, None, 10, 0.0, False, 0.1, "cpu", 0.0, None, None,
                                                None),
        "numpy_array": lambda: np.empty(1000, np.float32),
        "torch_from_numpy": lambda: torch.from_numpy(f32),
        "torch_to_dlpack": lambda: to_dlpack(tensor),
    }
    rounds = c_loop_calibrated(0.02)
    clock = time.perf_counter
    cold: dict[str, list[float]] = {name: [] for name in steps}
    warm: dict[str, list[float]] = {name: [] for name in steps}
    for _ in range(args.repeats):
        for name, step in steps.items():
            hashlib.pbkdf2_hmac("sha256", b"k", b"s", rounds)
            t0 = clock()
            step()
            cold[name].append((clock() - t0) * 1e6)
            for _ in range(3):
                t0 = clock()
                step()
                warm[name].append((clock() - t0) * 1e6)

    rows = []
    for name in steps:
        row = {"step": name, "cold_median_us": float(np.median(cold[name])),
               "cold_q1_us": float(np.percentile(cold[name], 25)), "cold_q3_us": float(np.percentile(cold[name], 75)),
               "warm_median_us": float(np.median(warm[name])), "count": len(cold[name])}
        rows.append(row)
        print(f"{name:18s} cold {row['cold_median_us']:7.1f} µs [IQR {row['cold_q1_us']:.1f}–{row['cold_q3_us']:.1f}]"
              f"   warm {row['warm_median_us']:6.2f} µs", flush=True)

    commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    report = {
        "benchmark": "python_cold_floor",
        "what": "each step alone: after a ~20 ms C loop (cold) and right after itself (warm)",
        "machine": platform.node(), "cpu": platform.processor() or platform.machine(),
        "python": platform.python_version(), "numpy": np.__version__, "torch": torch.__version__,
        "commit": commit, "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "repeats": args.repeats, "rows": rows,
    }
    out = Path(args.out) if args.out else REPO / "bench" / "results" / f"python_cold_floor_{_dt.date.today()}.json"
    out.write_text(json.dumps(report, indent=1) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
