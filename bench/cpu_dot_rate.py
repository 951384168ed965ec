#!/usr/bin/env python3
"""The CPU backend's dot-product rate at large d against the machine's measured FMA ceiling.

At large d a half-step of the streaming solver is a GEMM it does not store: 2·n·m·d flops of dot
products (the exponentials add O(n·m), negligible at d ≥ 512). This times `flashsinkhorn solve
--iters I --tol 0` (10 alternating iterations = 2·I half-steps) on x, y ~ N(0, I_d) and reads its
solve_seconds, then divides 2·I·2·n·m·d by it; flashsinkhorn_cpu_fma_peak gives the ceiling with
the same thread count, right before. Prints one JSON document and appends it to --out (JSON lines):
    python3 bench/cpu_dot_rate.py [--n 3000] [--d 1024] [--iters 10] [--threads 2] [--out FILE.jsonl]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench" / "suite"))
import protocol  # noqa: E402  (the suite's machine, commit and date stamps)


def ceiling(binary: Path, threads: int) -> dict:
    """GFLOP/s per precision at `threads` (the all-thread row when threads > 1)."""
    out = subprocess.run([str(binary), "--seconds", "2"], capture_output=True, text=True, check=True,
                         env={"OMP_NUM_THREADS": str(threads), "PATH": "/usr/bin:/bin"}).stdout
    rows = [json.loads(line) for line in out.splitlines()]
    return {r["precision"]: r["gflops"] for r in rows if r["threads"] == threads}


def solve_seconds(cli: Path, x: Path, y: Path, precision: str, iters: int, threads: int) -> dict:
    run = subprocess.run([str(cli), "solve", "--x", str(x), "--y", str(y), "--eps", "0.1", "--iters", str(iters),
                          "--tol", "0", "--precision", precision, "--threads", str(threads), "--device", "cpu"],
                         capture_output=True, text=True, check=True)
    text = run.stdout
    return json.loads(text[text.index("{"):])


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=3000)
    ap.add_argument("--d", type=int, default=1024)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--build", type=Path, default=REPO / "build")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    cli = args.build / "apps" / "cli" / "flashsinkhorn"
    peak = ceiling(args.build / "bench" / "flashsinkhorn_cpu_fma_peak", args.threads)
    rng = np.random.default_rng(0)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for precision, dtype in (("fp32", np.float32), ("fp64", np.float64)):
            x, y = Path(tmp) / f"x_{precision}.npy", Path(tmp) / f"y_{precision}.npy"
            np.save(x, rng.standard_normal((args.n, args.d)).astype(dtype))
            np.save(y, rng.standard_normal((args.n, args.d)).astype(dtype))
            result = solve_seconds(cli, x, y, precision, args.iters, args.threads)
            flops = 2 * args.iters * 2.0 * args.n * args.n * args.d
            rate = flops / result["solve_seconds"] / 1e9
            rows.append(dict(precision=precision, n=args.n, d=args.d, iterations=result["iterations"],
                             solve_seconds=result["solve_seconds"], dot_gflops=round(rate, 2),
                             ceiling_gflops=peak[precision], of_ceiling=round(rate / peak[precision], 3)))
            print(f"{precision}: n = {args.n}, d = {args.d}, {args.iters} iterations in {result['solve_seconds']:.2f} s: "
                  f"{rate:.1f} GFLOP/s of dot products, {rate / peak[precision]:.0%} of the measured "
                  f"{peak[precision]:.1f}", file=sys.stderr)
    doc = dict(bench="cpu_dot_rate", machine=protocol.machine(), commit=protocol.commit(), date=protocol.now(),
               command="python3 bench/cpu_dot_rate.py " + " ".join(argv if argv is not None else sys.argv[1:]),
               threads=args.threads, rows=rows)
    if args.out:  # one line per run: repeated runs of a noisy machine land side by side
        with args.out.open("a") as sink:
            sink.write(json.dumps(doc) + "\n")
    print(json.dumps(doc))
    return doc


if __name__ == "__main__":
    main()
