"""bench/baseline_ab.sh (gpu_check's stage `baseline`): both trees' rows come back tagged with their
tree, commit and round, each side gets its own environment, and the table compares the medians.
The two benchmarks are stand-ins that print gpu_forward_bench's JSON lines, so no GPU is needed."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# Prints one gpu_forward_bench row per (size, precision) of --sizes / --precisions; its time is
# FAKE_MS and it reports the key-pairs switch it saw, so the test can see each side's environment.
FAKE_BENCH = r"""#!/usr/bin/env python3
import json, os, sys
args = dict(zip(sys.argv[1::2], sys.argv[2::2]))
for size in args["--sizes"].split(","):
    n, d = (int(v) for v in size.split("x"))
    for precision in args["--precisions"].split(","):
        print(json.dumps({"impl": "flashsinkhorn", "kernel": "fake", "n": n, "m": n, "d": d,
                          "precision": precision, "ms_per_iteration": float(os.environ.get("FAKE_MS", "1")),
                          "roofline_fraction": 0.5,
                          "key_pairs": os.environ.get("FLASHSINKHORN_STREAMED_KEY_PAIRS", "auto")}))
"""


def test_baseline_ab_tags_both_trees_and_compares_their_medians(tmp_path: Path) -> None:
    bench = tmp_path / "fake_bench"
    bench.write_text(FAKE_BENCH)
    bench.chmod(bench.stat().st_mode | stat.S_IXUSR)
    target = tmp_path / "baseline_ab.json"
    env = dict(os.environ, BASELINE_BENCH=str(bench), BASELINE_COMMIT="abc1234", BENCH=str(bench), FS_COMMIT="def5678",
               SIZES="50000x1024,10000x512", PRECISIONS="tf32", ROUNDS="3",
               BOTH_ENV="FLASHSINKHORN_STREAMED_KEY_PAIRS=on", BASELINE_ENV="FAKE_MS=2", CURRENT_ENV="FAKE_MS=3")
    run = subprocess.run([str(ROOT / "bench" / "baseline_ab.sh"), str(target)], env=env, capture_output=True, text=True,
                         check=True)
    result = json.loads(target.read_text())
    assert result["benchmark"] == "baseline_ab" and result["commit"] == "def5678"
    rows = result["rows"]
    assert len(rows) == 2 * 2 * 3  # two sizes, two trees, three rounds
    for tree, commit, ms in (("baseline", "abc1234", 2.0), ("current", "def5678", 3.0)):
        side = [r for r in rows if r["tree"] == tree]
        assert {r["tree_commit"] for r in side} == {commit}
        assert {r["round"] for r in side} == {1, 2, 3}
        assert {r["ms_per_iteration"] for r in side} == {ms}  # each side's own environment
        assert {r["key_pairs"] for r in side} == {"on"}  # and the shared one
    table = [line.split() for line in run.stdout.splitlines()[1:]]
    assert [(line[0], line[1], line[3], line[4], line[5]) for line in table] == [
        ("10000", "512", "2.000", "3.000", "1.500"), ("50000", "1024", "2.000", "3.000", "1.500")]
