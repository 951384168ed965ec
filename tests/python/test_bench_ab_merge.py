"""bench/suite/ab_merge.py on fixture suite rows: an A/B's runs gathered into one JSON, each case's
median per value and its ratio to the first value. Nothing here measures anything."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

MERGE = Path(__file__).resolve().parents[2] / "bench" / "suite" / "ab_merge.py"
SETTING = "FLASHSINKHORN_FP32_PASS_EXP"


def row(value: str, ms: float, n: int = 10_000, status: str = "ok") -> dict:
    return {"suite": "flashsinkhorn-bench-suite", "commit": "abc1234", "date": "2099-01-01T00:00:00+00:00",
            "machine": {"gpu": "fixture GPU", "flashsinkhorn_env": {SETTING: value}}, "impl": "flashsinkhorn",
            "op": "hvp", "n": n, "d": 3, "precision": "fp32", "status": status, "ms": ms}


def test_the_runs_merge_with_medians_and_ratios_to_the_first_value(tmp_path: Path) -> None:
    runs = []
    for value, times in (("float64", [100.0, 120.0, 110.0]), ("ex2", [50.0, 60.0, 55.0])):
        path = tmp_path / f"suite_{value}.jsonl"
        rows = [row(value, ms) for ms in times] + [row(value, 1.0, status="timeout"), row(value, 9.0, n=50_000)]
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        runs.append(str(path))
    out = tmp_path / "fp32_pass_exp_ab.json"
    printed = subprocess.run([sys.executable, str(MERGE), "--out", str(out), "--setting", SETTING, "--command", "fixture",
                              *runs], check=True, capture_output=True, text=True).stdout
    merged = json.loads(out.read_text())
    assert merged["benchmark"] == "fp32_pass_exp_ab" and merged["commit"] == "abc1234"
    assert "flashsinkhorn_env" not in merged["machine"] and len(merged["rows"]) == 10
    case = next(c for c in merged["summary"] if c["n"] == 10_000)
    assert case["median_ms"] == {"float64": 110.0, "ex2": 55.0}  # the timeout row left out
    assert case["ratio_to_float64"] == {"float64": 1.0, "ex2": 0.5}
    assert '"ex2": 0.5' in printed


def test_no_suite_rows_is_an_error(tmp_path: Path) -> None:
    empty = tmp_path / "suite_empty.jsonl"
    empty.write_text("")
    done = subprocess.run([sys.executable, str(MERGE), "--out", str(tmp_path / "x.json"), "--setting", SETTING,
                           "--command", "fixture", str(empty)], capture_output=True, text=True)
    assert done.returncode != 0 and "no suite rows" in done.stderr
    assert not (tmp_path / "x.json").exists()
