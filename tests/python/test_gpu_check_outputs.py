"""tools/gpu_check.sh's outputs fit what comes back from the device (at most 8 files): on exit,
results beyond seven files beside logs.tgz are bundled into results.tgz whole; fewer stay as they are.
No stage runs (STAGES=""), so no GPU is needed."""

from __future__ import annotations

import os
import subprocess
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run_gpu_check(tmp_path: Path, results: int) -> Path:
    out = tmp_path / "out"
    (out / "suite").mkdir(parents=True)
    for i in range(results - 1):
        (out / f"row_{i}.json").write_text("{}\n")
    (out / "suite" / "nested.jsonl").write_text("{}\n")
    env = dict(os.environ, STAGES="", OUT=str(out), LOG_DIR=str(tmp_path / "logs"))
    subprocess.run([str(ROOT / "tools" / "gpu_check.sh")], env=env, check=True, timeout=60)
    return out


def test_more_than_seven_results_come_back_as_one_bundle(tmp_path: Path) -> None:
    out = run_gpu_check(tmp_path, results=12)
    assert sorted(p.name for p in out.iterdir()) == ["logs.tgz", "results.tgz"]
    with tarfile.open(out / "results.tgz") as bundle:
        names = {Path(n).as_posix().removeprefix("./") for n in bundle.getnames()}
    assert {f"row_{i}.json" for i in range(11)} | {"suite/nested.jsonl"} <= names
    assert "logs.tgz" not in names


def test_few_results_stay_as_they_are(tmp_path: Path) -> None:
    out = run_gpu_check(tmp_path, results=3)
    assert sorted(p.name for p in out.iterdir()) == ["logs.tgz", "row_0.json", "row_1.json", "suite"]
