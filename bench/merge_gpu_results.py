"""Merges the JSON lines of gpu_forward_bench and the peer runners into one results file.

    python3 bench/merge_gpu_results.py OUT.json ours.jsonl peers.jsonl ...
Environment: FS_COMMIT (the commit measured; the device copy has no .git), FS_MACHINE, FS_BENCHMARK
(the file's kind, default gpu_forward: BENCHMARKS.md's forward tables read that kind only).
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


def read_rows(inputs: list[str]) -> list[dict]:
    return [row for path in inputs if os.path.exists(path) for row in read_lines(path)]


def attach_peer(rows: list[dict], peer_metric: str, our_metric: str, prefix: str) -> None:
    """Adds to each flashsinkhorn row the flash-sinkhorn row of the same (n, d, precision) (bf16
    and fp64 rows fall back to the peer's tf32 row): `prefix`_ms and speedup_`prefix`."""
    peers = {(r["n"], r["d"], r["precision"]): r for r in rows if r["impl"] == "flash-sinkhorn" and peer_metric in r}
    for r in rows:
        if r["impl"] != "flashsinkhorn" or our_metric not in r:
            continue
        peer = peers.get((r["n"], r["d"], r["precision"])) or peers.get((r["n"], r["d"], "tf32"))
        if peer:
            r[f"flash_sinkhorn_{prefix}"] = peer[peer_metric]
            r[f"speedup_{prefix}_vs_flash_sinkhorn"] = peer[peer_metric] / r[our_metric]
            r["peer_precision"] = peer["precision"]


def write_results(target: str, benchmark: str, protocol: str, rows: list[dict]) -> None:
    result = {
        "benchmark": benchmark,
        "protocol": protocol,
        "machine": os.environ.get("FS_MACHINE", platform.node()),
        "commit": os.environ.get("FS_COMMIT", "unknown"),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "versions": versions(),
        "rows": rows,
    }
    with open(target, "w") as f:
        json.dump(result, f, indent=1)


def main() -> None:
    target, *inputs = sys.argv[1:]
    rows = read_rows(inputs)
    attach_peer(rows, "ms_per_iteration", "ms_per_iteration", "ms_per_iteration")
    for r in rows:  # the names earlier results use
        if "speedup_ms_per_iteration_vs_flash_sinkhorn" in r:
            r["speedup_vs_flash_sinkhorn"] = r.pop("speedup_ms_per_iteration_vs_flash_sinkhorn")
    write_results(target, os.environ.get("FS_BENCHMARK", "gpu_forward"),
                  "x,y~N(0,I_d), weights U[0,1)+0.1 normalised, eps=0.1, 10 alternating iterations, "
                  "CUDA-event median after warm-up", rows)
    for r in rows:
        if r["impl"] == "flashsinkhorn":
            print(f"n={r['n']:>6} d={r['d']:>4} {r['precision']} [{r.get('kernel', '?')}]: {r['ms_per_iteration']:.4f} ms/iter, "
                  f"{r['roofline_fraction']:.0%} of floor, x{r.get('speedup_vs_flash_sinkhorn', float('nan')):.2f} vs flash-sinkhorn")


if __name__ == "__main__":
    main()
