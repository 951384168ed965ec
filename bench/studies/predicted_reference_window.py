#!/usr/bin/env python3
"""How often the narrow softmin's predicted row references fail their guard, and whether a margin
fixes it — computed exactly on the CPU, no GPU needed (docs/cuda_backend.md, "Next steps for the
forward", item 5: at d ≥ 8 the predicted kernel ran 1.5–2.2× slower than the online one on the H200,
and the suspected cause was CTAs whose guard fails and which then fold their keys twice).

The kernel (softmin_narrow_kernel.cuh) predicts row i's log-sum-exp from its previous potential:
in natural units pred_i = −f_prev_i/(κε) relative to the full scores t_ij = (g_j − C_ij)/ε + log b_j,
subtracts ref_i = pred_i − M (M: a margin, 0 in the kernel today) and sums 2^(t_ij − ref_i) (log₂
units) over the keys of its split. A CTA (a block of 512 rows — 128 for the warp-specialised wgmma kernel,
--block-rows — against one split of the keys) folds
again with the online maximum when one of its rows' sums leaves [2⁻⁶⁰, 3·10³⁸]: in log₂ units, when
log₂ Σ = (lse_split,i − pred_i)·log₂e + M < −60 or > 127.8.

Here float64 Sinkhorn on the suite's protocol (x, y ~ N(0, I_d), seed 0, weights U[0,1) + 0.1
normalised, C = ‖x − y‖², ε = 0.1, alternating, zero initial potentials, 10 iterations) computes, for
every half-step, the exact per-split log-sum-exps and reports the fraction of CTAs whose guard fails,
for each split count and margin, and the quantiles of lse_i − pred_i (log₂ units, whole rows).

    python3 bench/studies/predicted_reference_window.py --n 10000 --ds 3,8,16 --splits 1,4,16 --margins 0,32,64
    python3 bench/studies/predicted_reference_window.py --block-rows 128 --ds 8,16,64 --splits 1,5 --margins 96
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

LOG2E = 1.0 / math.log(2.0)
UNDERFLOW_LOG2, OVERFLOW_LOG2 = -60.0, math.log2(3.0e38)


def split_lse(scores: torch.Tensor, splits: int) -> torch.Tensor:
    """(rows, splits): the log-sum-exp of each contiguous split of the columns (tiles of 128 keys
    dealt out as the launcher does: equal runs of whole tiles, the last one shorter)."""
    m = scores.shape[1]
    tiles = -(-m // 128)
    per = -(-tiles // splits) * 128
    return torch.stack([torch.logsumexp(scores[:, s * per:(s + 1) * per], dim=1)
                        for s in range(splits) if s * per < m], dim=1)


def half_step(rows: torch.Tensor, keys: torch.Tensor, key_potential: torch.Tensor, log_weights: torch.Tensor,
              previous: torch.Tensor, eps: float, split_counts: list[int], margins: list[float], chunk: int,
              block_rows: int):
    """The new potential of the rows, the guard's failure fraction per (splits, margin) and the whole
    rows' prediction errors (log₂ units)."""
    n = rows.shape[0]
    new = torch.empty(n, dtype=torch.float64)
    fails = {(s, mgn): 0 for s in split_counts for mgn in margins}
    ctas = {s: 0 for s in split_counts}
    errors = torch.empty(n, dtype=torch.float64)
    bias = key_potential / eps + log_weights
    for r0 in range(0, n, block_rows * max(1, chunk // block_rows)):
        r1 = min(n, r0 + block_rows * max(1, chunk // block_rows))
        cost = torch.cdist(rows[r0:r1], keys).square_()
        scores = bias - cost / eps
        lse = torch.logsumexp(scores, dim=1)
        new[r0:r1] = -eps * lse
        pred = -previous[r0:r1] / eps
        errors[r0:r1] = (lse - pred) * LOG2E
        for s in split_counts:
            relative = (split_lse(scores, s) - pred[:, None]) * LOG2E  # log₂ Σ over the split, M = 0
            for b0 in range(0, r1 - r0, block_rows):
                block = relative[b0:b0 + block_rows]
                ctas[s] += block.shape[1]
                for mgn in margins:
                    shifted = block + mgn
                    bad = ((shifted < UNDERFLOW_LOG2) | (shifted > OVERFLOW_LOG2)).any(dim=0)
                    fails[(s, mgn)] += int(bad.sum())
    fractions = {f"splits={s} margin={mgn:g}": fails[(s, mgn)] / ctas[s] for s in split_counts for mgn in margins}
    return new, fractions, errors


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=10000)
    ap.add_argument("--ds", default="3,8,16")
    ap.add_argument("--splits", default="1,4,16")
    ap.add_argument("--margins", default="0,32,64")
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--chunk", type=int, default=2048)
    ap.add_argument("--block-rows", type=int, default=512,
                    help="rows a CTA: 512 the narrow kernel (narrow::block_rows<float>), 128 the wgmma ones")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    split_counts = [int(v) for v in args.splits.split(",")]
    margins = [float(v) for v in args.margins.split(",")]
    rows_out = []
    for d in (int(v) for v in args.ds.split(",")):
        x, y, a, b = (torch.from_numpy(v) for v in protocol.make_data(args.n, d))
        log_a, log_b = a.log(), b.log()
        f = torch.zeros(args.n, dtype=torch.float64)
        g = torch.zeros(args.n, dtype=torch.float64)
        for it in range(1, args.iters + 1):
            for side in ("f", "g"):
                if side == "f":
                    f, fractions, errors = half_step(x, y, g, log_b, f, protocol.EPS, split_counts, margins, args.chunk,
                                                     args.block_rows)
                else:
                    g, fractions, errors = half_step(y, x, f, log_a, g, protocol.EPS, split_counts, margins, args.chunk,
                                                     args.block_rows)
                q = torch.quantile(errors, torch.tensor([0.0, 0.01, 0.5, 0.99, 1.0], dtype=torch.float64)).tolist()
                row = {"n": args.n, "d": d, "block_rows": args.block_rows, "iteration": it, "half_step": side,
                       "lse_minus_prediction_log2_quantiles": {"min": q[0], "p01": q[1], "median": q[2], "p99": q[3],
                                                               "max": q[4]},
                       "failing_cta_fraction": fractions}
                rows_out.append(row)
                worst = ", ".join(f"{k}: {v:.2f}" for k, v in fractions.items())
                print(f"d={d:<3} it={it:<2} {side}: lse−pred log₂ [min {q[0]:8.1f}, p01 {q[1]:8.1f}, median {q[2]:7.1f}, "
                      f"max {q[4]:7.1f}]  failing CTAs {worst}", flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps({"study": "predicted_reference_window", "commit": protocol.commit(),
                                              "date": protocol.now(), "rows": rows_out}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
