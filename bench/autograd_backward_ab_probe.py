#!/usr/bin/env python3
"""A/B of two versions of the differentiable cost's backward in one process (issue 6: SamplesLoss
forward + backward costs hundreds of µs more than the C++ solve + gradient_x).

The baseline is an older copy of python/flashsinkhorn/_autograd.py (e.g. `git show
REV:python/flashsinkhorn/_autograd.py`), loaded beside the current one as the module
flashsinkhorn._autograd_baseline; its SinkhornFunction.backward and the current one take turns as
_PlainSinkhornFunction.backward (the Function a training loop's SamplesLoss goes through), call by
call, the order flipped every round. Timed: `value.backward()` alone (the autograd engine, the
backward, the accumulation into x.grad) after a SamplesLoss forward (blur = √0.1, scaling None,
iters 10, tol 0, alternating, fp32), CPU tensors, one thread. Reported: both medians of the warm
calls.

    git show HEAD~1:python/flashsinkhorn/_autograd.py > /tmp/base_autograd.py
    PYTHONPATH=build/python python3 bench/autograd_backward_ab_probe.py --baseline /tmp/base_autograd.py
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import math
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch

import flashsinkhorn as fs
from baseline_module import load_baseline
from flashsinkhorn import _autograd

REPO = Path(__file__).resolve().parent.parent


def commit() -> str:
    done = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return done.stdout.strip() or "unknown"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline", required=True, help="an older python/flashsinkhorn/_autograd.py")
    ap.add_argument("--rounds", type=int, default=4000)
    ap.add_argument("--warmup", type=int, default=200)
    ap.add_argument("--n", type=int, default=1)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    versions = {"baseline": load_baseline(args.baseline, "_autograd").SinkhornFunction.backward,
                "current": _autograd.SinkhornFunction.backward}
    loss = fs.SamplesLoss("sinkhorn", p=2, blur=math.sqrt(0.1), scaling=None, debias=False, cost_scale=1.0,
                          solver="alternating", iters=10, tol=0.0, device="cpu", precision="fp32", threads=1)
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(args.n, 3, generator=generator).requires_grad_()
    y = torch.randn(args.n, 3, generator=generator)
    samples: dict[str, list[float]] = {name: [] for name in versions}
    for r in range(args.warmup + args.rounds):
        order = list(versions.items()) if r % 2 else list(reversed(versions.items()))
        for name, backward in order:
            _autograd._PlainSinkhornFunction.backward = staticmethod(backward)
            value = loss(x, y)
            t0 = time.perf_counter()
            value.backward()
            elapsed = time.perf_counter() - t0
            x.grad = None
            if r >= args.warmup:
                samples[name].append(elapsed * 1e6)
    _autograd._PlainSinkhornFunction.backward = staticmethod(versions["current"])
    report = {"probe": "autograd_backward_ab", "baseline": args.baseline, "n": args.n, "rounds": args.rounds,
              "backward_median_us": {name: round(statistics.median(v), 2) for name, v in samples.items()},
              "commit": commit(), "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
              "machine": {"platform": platform.platform(), "python": sys.version.split()[0],
                          "torch": torch.__version__}}
    text = json.dumps(report, indent=1)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
