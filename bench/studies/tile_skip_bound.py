#!/usr/bin/env python3
"""Could the forward skip whole tiles, as KeOps' block-sparse ranges and GeomLoss's multiscale mode do?
An upper bound on what any tile-skipping scheme could save on the benchmark's clouds, computed
exactly on the CPU (no GPU needed).

A tile (128 rows × 128 keys) may be skipped in a row half-step without changing any fp32 result when
every score in it lies T log₂ units under each of its rows' log-sum-exp: the m skipped terms then sum
to at most m·2^−T of the row's total, under fp32's 2⁻²⁴ for T = 24 + log₂ m (40 at m ≤ 65,536).
Skipping pays only when rows and keys are ordered so that a tile holds nearby points; here both
clouds are ordered by a principal-axis median split down to leaves of 128 (a k-d tree; the best a
kernel could do cheaply), and the test uses each tile's exact maximum score, which no practical
bound (boxes, balls) reaches. So the printed fraction is an upper bound on the skippable work.

Protocol as the suite's (x, y ~ N(0, I_d), seed 0, weights U[0,1) + 0.1 normalised,
C = ‖x − y‖², ε = 0.1, alternating from zero potentials); reported after the f-update of the given
iterations (the g-update is symmetric).

    python3 bench/studies/tile_skip_bound.py --n 16384 --ds 3,8 --iters 1,10 --out results.json
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "suite"))
import protocol  # noqa: E402

TILE = 128


def spatial_order(points: torch.Tensor) -> torch.Tensor:
    """A permutation that puts points of one leaf (TILE points, split at the median of the leading
    principal axis, recursively) next to each other."""
    def split(index: torch.Tensor) -> list[torch.Tensor]:
        if index.numel() <= TILE:
            return [index]
        centred = points[index] - points[index].mean(0)
        axis = torch.linalg.svd(centred, full_matrices=False).Vh[0]
        order = index[torch.argsort(centred @ axis)]
        half = order.numel() // 2
        return split(order[:half]) + split(order[half:])
    return torch.cat(split(torch.arange(points.shape[0])))


def scores(rows: torch.Tensor, keys: torch.Tensor, bias: torch.Tensor, eps: float) -> torch.Tensor:
    return bias - torch.cdist(rows, keys).square_() / eps


def half_step(rows, keys, key_potential, log_weights, eps, chunk):
    bias = key_potential / eps + log_weights
    return torch.cat([-eps * torch.logsumexp(scores(rows[r:r + chunk], keys, bias, eps), dim=1)
                      for r in range(0, rows.shape[0], chunk)])


def skippable_fraction(rows, keys, key_potential, log_weights, eps, threshold_log2, chunk):
    """The fraction of tiles whose every score is threshold_log2 under each of the tile's rows' LSE."""
    bias = key_potential / eps + log_weights
    skippable, tiles = 0, 0
    for r in range(0, rows.shape[0], chunk):
        s = scores(rows[r:r + chunk], keys, bias, eps)
        lse = torch.logsumexp(s, dim=1)
        gap = (lse[:, None] - s) / math.log(2.0)  # log₂ units under the row's total
        row_tiles, key_tiles = gap.shape[0] // TILE, gap.shape[1] // TILE
        tile_min_gap = gap[:row_tiles * TILE, :key_tiles * TILE].reshape(row_tiles, TILE, key_tiles, TILE).amin((1, 3))
        skippable += int((tile_min_gap > threshold_log2).sum())
        tiles += tile_min_gap.numel()
    return skippable / tiles


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=16384)
    ap.add_argument("--ds", default="3,8")
    ap.add_argument("--iters", default="1,10", help="report after the f-update of these iterations")
    ap.add_argument("--threshold", type=float, default=None, help="T in log₂ units; default 24 + log₂ n")
    ap.add_argument("--chunk", type=int, default=1024, help="rows a block of the dense computation (multiple of 128)")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    threshold = args.threshold if args.threshold is not None else 24 + math.log2(args.n)
    report_at = {int(v) for v in args.iters.split(",")}
    eps = protocol.EPS
    rows_out = []
    for d in (int(v) for v in args.ds.split(",")):
        x, y, a, b = (torch.from_numpy(v) for v in protocol.make_data(args.n, d))
        px, py = spatial_order(x), spatial_order(y)
        x, a, y, b = x[px], a[px], y[py], b[py]
        g = torch.zeros(args.n, dtype=torch.float64)
        for it in range(1, max(report_at) + 1):
            if it in report_at:
                fraction = skippable_fraction(x, y, g, b.log(), eps, threshold, args.chunk)
                rows_out.append({"n": args.n, "d": d, "iteration": it, "threshold_log2": threshold,
                                 "skippable_tile_fraction": fraction})
                print(f"d={d:<4} iteration {it:<3} f-update: {fraction:.4f} of the tiles skippable "
                      f"(T = {threshold:.1f} log₂ units, exact tile maxima)", flush=True)
            f = half_step(x, y, g, b.log(), eps, args.chunk)
            g = half_step(y, x, f, a.log(), eps, args.chunk)
    if args.out:
        Path(args.out).write_text(json.dumps({"study": "tile_skip_bound", "commit": protocol.commit(),
                                              "date": protocol.now(), "tile": TILE, "rows": rows_out}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
