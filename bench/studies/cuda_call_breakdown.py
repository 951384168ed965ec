#!/usr/bin/env python3
"""Where the host time of a Python call on CUDA tensors goes (issue 6: "a Python call at n = m = 1,000
within 20 µs of the C++ call"; bench/python_call_overhead.py measured the CUDA path 180–200 µs above
the C++ call even at n = 1, where the CPU path is within 10 µs).

The call `fs.sinkhorn(x, y, eps=0.1, iters=10, tol=0, precision=p)` on CUDA tensors takes the path of
_functional.sinkhorn for tensors that do not require grad. This study runs that path's steps one by
one, in the same order and with the same arguments, and reads the clock between them:

  frame        Frame.of(x, y, a, b)                     options   options_for(...) (a cached lookup)
  outputs      f, g and the 0-d cost: three new_empty on the GPU (_device_outputs)
  inputs       core_array(...) for x, y, a, b, f0, g0   stream    current_stream(frame)
  construct    _core.new_solver(...) (binding + solver construction: validation, device prepare)
  solve        core.solve_into(...) (binding + the loop; returns with the potentials and the value
               written on the device)                   result    SinkhornResult + PrimalTerms
  release      dropping the result (the solver's device buffers are freed) — after the clock in every
               other measurement, reported apart

For each step the median over --calls calls (after --warmup), and beside them the whole call timed as a
user writes it, and the core's own clock (`seconds`: construction + solve inside the library). The
sum of the steps' medians should be close to the whole call's median; what the core's clock does not
cover in `construct` + `solve` is the binding's and the CUDA runtime's host time. The steps are the
general path's; the whole call takes the short path (flashsinkhorn._torch_calls where it is built,
`whole_call_by` says which) and, with _torch_calls, is also timed on the Python short path.

    python3 bench/studies/cuda_call_breakdown.py --ns 1,1000 --out breakdown.jsonl
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
from flashsinkhorn import _core, _functional  # noqa: E402
from flashsinkhorn._arrays import Frame, core_array, current_stream, device_address  # noqa: E402
from flashsinkhorn._functional import PrimalTerms, SinkhornResult, Solver, _device_outputs  # noqa: E402
from flashsinkhorn._options import options_for  # noqa: E402

STEPS = ("frame", "options", "outputs", "inputs", "stream", "construct", "solve", "result", "release")


def stepped_call(x, y, precision: str, clock) -> tuple[dict[str, float], float]:
    """One call of sinkhorn()'s CUDA path, step by step; returns each step's µs and the core's seconds.
    The call makes one binding crossing for construction and solve (new_solved_into); here they are two
    (new_solver, Solver.solve_into), so that the construction's time is seen apart."""
    t = [clock()]
    frame = Frame.of(x, y, None, None)
    t.append(clock())
    options = options_for("sqeuclidean", "alternating", None, None, 10, 0.0, 10, 1.0, None, None, None, False,
                          precision, "auto", 0, True, frame.cuda_index)
    t.append(clock())
    f, g, f_aa, g_bb, cost = _device_outputs(frame, x.shape[0], y.shape[0], False, x)
    t.append(clock())
    xs, ys, a, b = core_array(x, frame), core_array(y, frame), core_array(None, frame), core_array(None, frame)
    f0, g0 = core_array(None, frame), core_array(None, frame)
    t.append(clock())
    stream = current_stream(frame)
    t.append(clock())
    core = _core.new_solver(xs, ys, a, b, 0.1, 1.0, f0, g0, options, None, stream)
    t.append(clock())
    fields = core.solve_into(device_address(f), device_address(g), None, None, device_address(cost))
    t.append(clock())
    s = Solver.__new__(Solver)
    s._frame, s._debias, s._core, s._in_place, s._solve_count = frame, False, core, True, 1
    result = SinkhornResult(f, g, cost, PrimalTerms(s), fields[0], fields[1], fields[2], fields[3], fields[4],
                            fields[5], s)
    t.append(clock())
    del result, s, core, f, g, cost
    t.append(clock())
    return {name: (t[i + 1] - t[i]) / 1e3 for i, name in enumerate(STEPS)}, fields[5]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ns", default="1,1000")
    ap.add_argument("--d", type=int, default=3)
    ap.add_argument("--precisions", default="tf32,fp32")
    ap.add_argument("--warmup", type=int, default=30)
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    if not torch.cuda.is_available() or not _core.cuda_available():
        print("cuda_call_breakdown: needs torch.cuda and a core built with CUDA; skipped", flush=True)
        return 0
    clock = time.perf_counter_ns
    rows = []
    generator = torch.Generator().manual_seed(0)
    for n in (int(float(v)) for v in args.ns.split(",")):
        x = torch.randn(n, args.d, generator=generator, dtype=torch.float64).float().cuda()
        y = torch.randn(n, args.d, generator=generator, dtype=torch.float64).float().cuda()
        for precision in args.precisions.split(","):
            options = dict(eps=0.1, iters=10, tol=0, precision=precision)
            for _ in range(args.warmup):
                fs.sinkhorn(x, y, **options)
                stepped_call(x, y, precision, clock)
            torch.cuda.synchronize()
            whole, whole_python, core_us, steps = [], [], [], {name: [] for name in STEPS}
            torch_calls = _functional._TORCH_CALLS
            for _ in range(args.calls):  # the whole calls and the stepped one alternate (drift hits all)
                t0 = clock()
                r = fs.sinkhorn(x, y, **options)
                whole.append((clock() - t0) / 1e3)
                core_us.append(r.seconds * 1e6)
                del r
                if torch_calls is not None:  # the same call on the Python short path
                    _functional._TORCH_CALLS = None
                    t0 = clock()
                    r = fs.sinkhorn(x, y, **options)
                    whole_python.append((clock() - t0) / 1e3)
                    _functional._TORCH_CALLS = torch_calls
                    del r
                split, _ = stepped_call(x, y, precision, clock)
                for name, us in split.items():
                    steps[name].append(us)
            medians = {name: statistics.median(v) for name, v in steps.items()}
            row = {"study": "cuda_call_breakdown", "n": n, "d": args.d, "precision": precision, "calls": args.calls,
                   "whole_call_us_median": statistics.median(whole), "core_clock_us_median": statistics.median(core_us),
                   "whole_call_by": "flashsinkhorn._torch_calls" if torch_calls is not None else "the Python short path",
                   "whole_call_python_path_us_median": statistics.median(whole_python) if whole_python else None,
                   "steps_us_median": {k: round(v, 2) for k, v in medians.items()},
                   "steps_sum_us_excluding_release": round(sum(v for k, v in medians.items() if k != "release"), 2),
                   "commit": protocol.commit(), "date": protocol.now(), "machine": protocol.machine(),
                   "versions": protocol.versions()}
            rows.append(row)
            if whole_python:
                print(f"n={n} d={args.d} {precision}: whole call on the Python short path "
                      f"{row['whole_call_python_path_us_median']:.1f} µs", flush=True)
            print(f"n={n} d={args.d} {precision}: whole call {row['whole_call_us_median']:.1f} µs "
                  f"({row['whole_call_by']}), core clock "
                  f"{row['core_clock_us_median']:.1f} µs, steps (sum {row['steps_sum_us_excluding_release']:.1f} µs "
                  "without release):", flush=True)
            for name in STEPS:
                print(f"   {name:10s} {medians[name]:9.1f} µs", flush=True)
    if args.out:
        Path(args.out).write_text("".join(json.dumps(r) + "\n" for r in rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
