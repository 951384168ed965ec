"""Merges the JSON lines of gpu_forward_bench and the peer runners into one results file.

    python3 bench/merge_gpu_results.py OUT.json ours.jsonl peers.jsonl ...
Environment: FS_COMMIT (the commit measured; the device copy has no .git), FS_MACHINE.
Adds, per flashsinkhorn row, the ratio to flash-sinkhorn at the same (n, d, precision) (tf32 rows
are compared with the peer's tf32 row, fp32 with fp32, bf16 with the peer's bf16 row, else tf32).
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import subprocess
import sys


def read_lines(path: str) -> list[dict]:
    rows = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("{"):
                rows.append(json.loads(line))
    return rows


def versions() -> dict:
    out = {"python": platform.python_version()}
    for module in ("torch", "triton", "flash_sinkhorn"):
        try:
            out[module] = __import__(module).__version__
        except Exception:  # noqa: BLE001
            pass
    try:
        out["nvcc"] = subprocess.run(["nvcc", "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1]
        out["driver"] = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                       capture_output=True, text=True).stdout.strip()
    except Exception:  # noqa: BLE001
        pass
    return out


def main() -> None:
    target, *inputs = sys.argv[1:]
    rows = [row for path in inputs if os.path.exists(path) for row in read_lines(path)]
    peers = {(r["n"], r["d"], r["precision"]): r for r in rows if r["impl"] == "flash-sinkhorn" and "ms_per_iteration" in r}
    for r in rows:
        if r["impl"] != "flashsinkhorn":
            continue
        peer = peers.get((r["n"], r["d"], r["precision"])) or peers.get((r["n"], r["d"], "tf32"))
        if peer:
            r["flash_sinkhorn_ms_per_iteration"] = peer["ms_per_iteration"]
            r["speedup_vs_flash_sinkhorn"] = peer["ms_per_iteration"] / r["ms_per_iteration"]
            r["peer_precision"] = peer["precision"]
    result = {
        "benchmark": "gpu_forward",
        "protocol": "x,y~N(0,I_d), weights U[0,1)+0.1 normalised, eps=0.1, 10 alternating iterations, "
                    "CUDA-event median after warm-up",
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
            print(f"n={r['n']:>6} d={r['d']:>4} {r['precision']} [{r.get('kernel', '?')}]: {r['ms_per_iteration']:.4f} ms/iter, "
                  f"{r['roofline_fraction']:.0%} of floor, x{r.get('speedup_vs_flash_sinkhorn', float('nan')):.2f} vs flash-sinkhorn")


if __name__ == "__main__":
    main()
