#!/usr/bin/env python3
"""A/B of two versions of sinkhorn()'s Python path in one process, cold (issue 6).

The call-overhead benchmark (bench/python_call_overhead.py) compares processes; on a shared VM the
cold-cache cost of a Python call drifts between runs by more than the changes being compared
(2026-12-01: +80 to +115 µs at n = 1,000 for one and the same build). Here the baseline is an older
copy of python/flashsinkhorn/_functional.py (e.g. `git show REV:python/flashsinkhorn/_functional.py`),
loaded beside the current one as the module flashsinkhorn._functional_baseline (same extension,
same arrays), and the two sinkhorn() alternate call by call, each after the same ~16 ms C loop that
leaves the caches cold (bench/python_cold_call_probe.py's c_loop condition), the order flipped
every round. What is timed: wall time minus the core's own clock (result.seconds) — the Python
path and the binding. Reported: both medians, the median of the per-round differences (current −
baseline), and the warm medians (back to back).

    git show 8155677:python/flashsinkhorn/_functional.py > /tmp/base.py
    PYTHONPATH=build/python python3 bench/python_path_ab_probe.py --baseline /tmp/base.py --rounds 300

--cuda: CUDA tensors on GPU 0 (torch's current stream; each call returns with its outputs written,
so the wall time needs no synchronisation) — the case issue 6 measures on the device, where one
process's A/B is the only comparison the machine's noise leaves readable. Without torch.cuda or a
CUDA core it says so and exits 0.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import sys
import time

import numpy as np

import flashsinkhorn as fs
from baseline_module import load_baseline


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline", required=True, help="an older python/flashsinkhorn/_functional.py")
    ap.add_argument("--rounds", type=int, default=300)
    ap.add_argument("--warm", type=int, default=2000, help="back-to-back calls per version")
    ap.add_argument("--n", type=int, default=1)
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--torch", action="store_true", help="CPU torch tensors instead of NumPy arrays")
    ap.add_argument("--cuda", action="store_true", help="CUDA torch tensors (GPU 0) instead of NumPy arrays")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    baseline = load_baseline(args.baseline, "_functional")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((args.n, 3)).astype(args.dtype)
    y = rng.standard_normal((args.n, 3)).astype(args.dtype)
    if args.torch or args.cuda:
        import torch
        x, y = torch.from_numpy(x), torch.from_numpy(y)
        if args.cuda:
            if not (torch.cuda.is_available() and fs.cuda_available()):
                print("python_path_ab_probe --cuda needs torch.cuda and a core built with CUDA; skipped")
                return 0
            x, y = x.cuda(), y.cuda()
    versions = {"baseline": baseline.sinkhorn, "current": fs.sinkhorn}

    def outside_core(sinkhorn) -> float:
        t0 = time.perf_counter()
        result = sinkhorn(x, y, eps=0.1, iters=10, tol=0, threads=1)
        return time.perf_counter() - t0 - result.seconds

    def cold_loop() -> None:
        hashlib.pbkdf2_hmac("sha256", b"k", b"s", 30000)

    for sinkhorn in versions.values():  # both paths loaded and their caches filled once
        outside_core(sinkhorn)
    cold = {name: [] for name in versions}
    names = list(versions)
    for r in range(args.rounds):
        for name in (names if r % 2 == 0 else names[::-1]):
            cold_loop()
            cold[name].append(outside_core(versions[name]))
    warm = {name: statistics.median(outside_core(f) for _ in range(args.warm)) for name, f in versions.items()}
    us = lambda v: round(v * 1e6, 2)  # noqa: E731
    report = {"probe": "python_path_ab", "baseline": args.baseline, "n": args.n, "dtype": args.dtype,
              "inputs": "CUDA torch tensors" if args.cuda else "CPU torch tensors" if args.torch else "NumPy arrays",
              "rounds": args.rounds,
              "cold_median_us": {k: us(statistics.median(v)) for k, v in cold.items()},
              "cold_difference_median_us": us(statistics.median(c - b for c, b in zip(cold["current"], cold["baseline"]))),
              "warm_median_us": {k: us(v) for k, v in warm.items()}}
    print(json.dumps(report, indent=1))
    if args.out:
        with open(args.out, "w") as sink:
            json.dump(report, sink, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
