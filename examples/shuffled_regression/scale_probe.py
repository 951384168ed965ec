"""What one Sinkhorn solve of the problem at size n costs: seconds a Sinkhorn iteration, the L1
marginal error after each chunk of iterations and the peak device memory, at W* — the evidence for
what an n = 10⁶ run would take (results/h200_n1000000_probe_s28/: 806 ms an iteration on the H200,
4.3·10⁻⁴ after 497 iterations):

  python3 examples/shuffled_regression/scale_probe.py --n 1000000 --chunks 50 100 100 200 --out probe.jsonl

The solve starts cold (ε-scaling from the diameter, `--scaling`; the schedule's iterations are the
first line) and each chunk continues warm from the last potentials, stopping early once the error is
≤ `--tol`. One JSON line per chunk.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

import flashsinkhorn as fs

from regression_data import make_data


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=1_000_000)
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--precision", default=None, help="default: fp32 on CUDA, fp64 on the CPU")
    p.add_argument("--eps", type=float, default=0.05)
    p.add_argument("--scaling", type=float, default=0.9, help="the cold solve's ε-scaling (run.py's loss uses 0.9)")
    p.add_argument("--tol", type=float, default=2e-4, help="L1 marginal error that ends the probe (run.py's --sinkhorn-tol)")
    p.add_argument("--chunks", type=int, nargs="+", default=[50, 100, 100, 200],
                   help="warm iterations of each chunk after the cold schedule")
    p.add_argument("--seed", type=int, default=2)
    p.add_argument("--out", type=Path, default=None, help="JSON lines (default: stdout only)")
    return p.parse_args(argv)


def probe(args: argparse.Namespace) -> list[dict]:
    """The cold schedule, then the warm chunks: one record each (iterations, seconds, error, memory)."""
    cuda = args.device.startswith("cuda")
    precision = args.precision or ("fp32" if cuda else "fp64")
    dtype = torch.float32 if precision != "fp64" else torch.float64
    data = make_data(n=args.n, seed=args.seed)
    z = torch.as_tensor(data.x @ data.w_star, dtype=dtype, device=args.device)
    y = torch.as_tensor(data.y, dtype=dtype, device=args.device)
    records, result = [], None
    for chunk in [0, *args.chunks]:
        options = dict(eps=args.eps, tol=args.tol, precision=precision, relaxation="auto")
        if result is None:
            options.update(scaling=args.scaling, iters=1)  # the schedule, then one iteration at ε
        else:
            options.update(initial_f=result.f, initial_g=result.g, iters=chunk)
        if cuda:
            torch.cuda.synchronize()
        started = time.perf_counter()
        result = fs.Solver(z, y, **options).solve()
        if cuda:
            torch.cuda.synchronize()
        seconds = time.perf_counter() - started
        records.append(dict(n=args.n, device=args.device, precision=precision, start="cold" if chunk == 0 else "warm",
                            iterations=int(result.iterations), seconds=seconds,
                            seconds_per_iteration=seconds / max(int(result.iterations), 1),
                            marginal_error=float(result.marginal_error), converged=bool(result.converged),
                            peak_bytes=torch.cuda.max_memory_allocated() if cuda else None))
        print(json.dumps(records[-1]), flush=True)
        if result.converged:
            break
    return records


def main(argv: list[str] | None = None) -> list[dict]:
    args = parse(argv)
    records = probe(args)
    if args.out is not None:
        args.out.write_text("".join(json.dumps(r) + "\n" for r in records))
    return records


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
