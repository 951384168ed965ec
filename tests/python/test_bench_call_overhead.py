"""bench/python_call_overhead.py runs end to end on a tiny setting (issue 6's overhead benchmark runs
on the GPU machine only; this keeps it from rotting between those runs — it broke once when the
autograd Functions changed where the forward's solve lives). Nothing is timed here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("flashsinkhorn._core")
pytest.importorskip("torch")

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "bench" / "python_call_overhead.py"
BINARY = REPO / "build" / "bench" / "flashsinkhorn_call_overhead"


@pytest.mark.skipif(not BINARY.exists(), reason="the C++ call-overhead benchmark is not built in build/")
def test_call_overhead_bench_runs(tmp_path):
    out = tmp_path / "overhead.json"
    environment = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    subprocess.run([sys.executable, str(BENCH), "--bin", str(BINARY), "--sizes", "1", "--rounds", "1",
                    "--repeats-small", "5", "--repeats-large", "1", "--repeats-cuda", "5", "--out", str(out)],
                   check=True, env=environment, capture_output=True, timeout=300)
    report = json.loads(out.read_text())
    callers = {row["caller"] for row in report["rows"]}
    assert {"cpp", "numpy", "torch", "samplesloss"} <= callers, callers
    assert all(row["median_us"] > 0 for row in report["rows"])
    # the CUDA rows ran, or were skipped with a reason (no torch.cuda, a core or program without CUDA)
    cuda_rows = [row for row in report["rows"] if row["device"] == "cuda"]
    cuda_skipped = [entry for entry in report["skipped"] if entry["device"] == "cuda"]
    assert cuda_rows or (cuda_skipped and all(entry["reason"] for entry in cuda_skipped)), report["skipped"]
