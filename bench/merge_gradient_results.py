"""Merges the plan-pass / gradient bench (flashsinkhorn_plan_bench) and the flash-sinkhorn forward +
gradient peer (bench/peers/flash_sinkhorn_forward.py --grad) into one results file, with the goals
of issue 4 checked per row:
  gradient_over_iteration  ≤ 1.3   (the gradient pass against one forward iteration, same run)
  speedup_forward_gradient ≥ 2.5   (flash-sinkhorn's forward + ∇x over ours, same sizes and run)

    python3 bench/merge_gradient_results.py OUT.json ours.jsonl peers.jsonl
Environment: FS_COMMIT, FS_MACHINE (as merge_gpu_results.py).
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import sys

from merge_gpu_results import read_lines, versions


def main() -> None:
    target, *inputs = sys.argv[1:]
    rows = [row for path in inputs if os.path.exists(path) for row in read_lines(path)]
    peers = {(r["n"], r["d"], r["precision"]): r for r in rows
             if r["impl"] == "flash-sinkhorn" and "ms_forward_gradient" in r}
    for r in rows:
        if r["impl"] != "flashsinkhorn":
            continue
        peer = peers.get((r["n"], r["d"], r["precision"])) or peers.get((r["n"], r["d"], "tf32"))
        if peer:
            r["flash_sinkhorn_forward_gradient_ms"] = peer["ms_forward_gradient"]
            r["speedup_forward_gradient_vs_flash_sinkhorn"] = peer["ms_forward_gradient"] / r["forward_gradient_ms"]
            r["peer_precision"] = peer["precision"]
    result = {
        "benchmark": "plan_pass_and_gradient",
        "protocol": "x,y~N(0,I_d), weights U[0,1)+0.1 normalised, eps=0.1; 10 alternating iterations then "
                    "the gradient w.r.t. x; CUDA-event medians after warm-up",
        "machine": os.environ.get("FS_MACHINE", platform.node()),
        "commit": os.environ.get("FS_COMMIT", "unknown"),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "versions": versions(),
        "rows": rows,
    }
    with open(target, "w") as f:
        json.dump(result, f, indent=1)
    for r in rows:
        if r["impl"] == "flashsinkhorn":
            print(f"n={r['n']:>6} d={r['d']:>4} {r['precision']}: gradient {r['gradient_ms']:.3f} ms = "
                  f"{r['gradient_over_iteration']:.2f} iterations (goal 1.3); forward+gradient "
                  f"{r['forward_gradient_ms']:.3f} ms, x{r.get('speedup_forward_gradient_vs_flash_sinkhorn', float('nan')):.2f} "
                  f"vs flash-sinkhorn (goal 2.5)")


if __name__ == "__main__":
    main()
