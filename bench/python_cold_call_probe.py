#!/usr/bin/env python3
"""Why a Python call costs more after a long solve: the same tiny call, timed warm and cold.

Issue 6 asks for a Python call at n = m = 1,000 within 20 µs of the C++ call;
bench/python_call_overhead.py measures +100 µs (NumPy) on the 2-core VM. This probe separates the
call's fixed cost from the state of the caches it runs in. One measured call is
`flashsinkhorn.sinkhorn(x, y, ...)` at n = m = 1 (the solve itself takes microseconds), and what is
timed is its wall time minus the core's own clock (`result.seconds`): the Python package plus the
binding. It is timed after each of these, before every call:
  warm          nothing (back to back: everything the call touches is in the caches);
  numpy_50ms    50 ms of unrelated NumPy work (other code and data evict the call's);
  sleep_50ms    50 ms asleep (the core may run other processes or idle meanwhile);
  spin_20ms     ~20 ms of an empty Python loop on the clock (the GIL held, the interpreter's smallest
                loop: almost no code or data of its own);
  c_loop_20ms   ~20 ms in one C loop that touches almost no memory (PBKDF2 in hashlib): if the call
                is slow after it too, what empties the caches is not this process's work but time —
                other processes, the hypervisor, the core's idle states;
  solve_n1000   a real n = m = 1,000 solve, 10 iterations (what the overhead benchmark does).
Medians over --repeats calls per condition, interleaved by round so that drift hits all.

Run: PYTHONPATH=build/python python3 bench/python_cold_call_probe.py [--out FILE]
Writes bench/results/python_cold_calls_<date>.json by default.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import hashlib
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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=40, help="calls per condition and round")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()

    import flashsinkhorn as fs

    kw = dict(eps=0.1, iters=10, tol=0.0, threads=1, device="cpu", solver="alternating")
    rng = np.random.default_rng(0)
    x1, y1 = rng.standard_normal((1, 3)), rng.standard_normal((1, 3))
    x_big, y_big = rng.standard_normal((1000, 3)), rng.standard_normal((1000, 3))
    noise = np.ones(3000)

    def numpy_work() -> None:
        end = time.perf_counter() + 0.05
        while time.perf_counter() < end:
            noise.sum()

    def spin() -> None:
        end = time.perf_counter() + 0.02
        while time.perf_counter() < end:
            pass

    rounds_per_20ms = c_loop_calibrated(0.02)
    before = {
        "warm": lambda: None,
        "numpy_50ms": numpy_work,
        "sleep_50ms": lambda: time.sleep(0.05),
        "spin_20ms": spin,
        "c_loop_20ms": lambda: hashlib.pbkdf2_hmac("sha256", b"k", b"s", rounds_per_20ms),
        "solve_n1000": lambda: fs.sinkhorn(x_big, y_big, **kw),
    }
    for _ in range(20):
        fs.sinkhorn(x1, y1, **kw)
    samples: dict[str, list[float]] = {name: [] for name in before}
    for _ in range(args.rounds):
        for name, prepare in before.items():
            for _ in range(args.repeats):
                prepare()
                t0 = time.perf_counter()
                result = fs.sinkhorn(x1, y1, **kw)
                wall = time.perf_counter() - t0
                samples[name].append((wall - result.seconds) * 1e6)

    rows = []
    for name, values in samples.items():
        q1, median, q3 = np.percentile(values, [25, 50, 75])
        rows.append({"before_call": name, "median_us": median, "q1_us": q1, "q3_us": q3, "count": len(values)})
        print(f"{name:12s} python + binding outside the core's clock: median {median:7.1f} µs "
              f"[IQR {q1:.1f}–{q3:.1f}]", flush=True)

    commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    report = {
        "benchmark": "python_cold_calls",
        "what": "sinkhorn() at n = m = 1: wall time minus result.seconds, after each condition",
        "machine": platform.node(), "cpu": platform.processor() or platform.machine(),
        "python": platform.python_version(), "numpy": np.__version__, "flashsinkhorn": fs.__version__,
        "commit": commit, "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "repeats": args.repeats, "rounds": args.rounds, "rows": rows,
    }
    out = Path(args.out) if args.out else REPO / "bench" / "results" / f"python_cold_calls_{_dt.date.today()}.json"
    out.write_text(json.dumps(report, indent=1) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
