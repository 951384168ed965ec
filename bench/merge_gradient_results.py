"""Merges the plan-pass / gradient bench (flashsinkhorn_plan_bench) and the flash-sinkhorn forward +
gradient peer (bench/peers/flash_sinkhorn_forward.py --grad) into one results file, with the goals
of issue 4 checked per row:
  gradient_over_iteration  ≤ 1.3   (the gradient pass against one forward iteration, same run)
  speedup_forward_gradient ≥ 2.5   (flash-sinkhorn's forward + ∇x over ours, same sizes and run)

    python3 bench/merge_gradient_results.py OUT.json ours.jsonl peers.jsonl
Environment: FS_COMMIT, FS_MACHINE (as merge_gpu_results.py).
"""

from __future__ import annotations

import sys

from merge_gpu_results import attach_peer, read_rows, write_results


def main() -> None:
    target, *inputs = sys.argv[1:]
    rows = read_rows(inputs)
    attach_peer(rows, "ms_forward_gradient", "forward_gradient_ms", "forward_gradient")
    write_results(target, "plan_pass_and_gradient",
                  "x,y~N(0,I_d), weights U[0,1)+0.1 normalised, eps=0.1; 10 alternating iterations then "
                  "the gradient w.r.t. x; CUDA-event medians after warm-up", rows)
    for r in rows:
        if r["impl"] == "flashsinkhorn":
            print(f"n={r['n']:>6} d={r['d']:>4} {r['precision']}: gradient {r['gradient_ms']:.3f} ms = "
                  f"{r['gradient_over_iteration']:.2f} iterations (goal 1.3); forward+gradient "
                  f"{r['forward_gradient_ms']:.3f} ms, x{r.get('speedup_forward_gradient_vs_flash_sinkhorn', float('nan')):.2f} "
                  f"vs flash-sinkhorn (goal 2.5)")


if __name__ == "__main__":
    main()
