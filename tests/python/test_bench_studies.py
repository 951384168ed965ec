"""bench/studies scripts that run without a GPU, run small: they must not rot between device sessions.
Nothing here measures anything."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("flashsinkhorn._core")

STUDIES = Path(__file__).resolve().parents[2] / "bench" / "studies"


def test_samplesloss_call_breakdown_on_the_cpu(tmp_path):
    """Forward and backward timed apart, the core's clock beside them, a profiler table; one JSON row
    per n."""
    out = tmp_path / "breakdown.jsonl"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    subprocess.run([sys.executable, str(STUDIES / "samplesloss_call_breakdown.py"), "--device", "cpu", "--ns", "1,40",
                    "--calls", "3", "--warmup", "1", "--profile-rows", "5", "--out", str(out)],
                   check=True, env=env, capture_output=True, text=True, timeout=300)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["n"] for r in rows] == [1, 40]
    for r in rows:
        m = r["median_us"]
        assert m["forward"] > 0 and m["backward"] > 0 and m["sinkhorn"] > 0
        assert 0 < m["core"] < m["forward"]  # the solve is inside the forward's wall time
        assert len(r["profile_forward_backward"]) == 5
        assert any("SinkhornFunction" in e["name"] for e in r["profile_forward_backward"])


@pytest.mark.parametrize("probe, module, run, medians", [
    ("python_path_ab_probe.py", "_functional.py", ["--rounds", "2", "--warm", "5"], "warm_median_us"),
    ("autograd_backward_ab_probe.py", "_autograd.py", ["--rounds", "3", "--warmup", "1"], "backward_median_us"),
])
def test_ab_probes_run_against_a_baseline(tmp_path, probe, module, run, medians):
    """The in-process A/B probes load a baseline copy of one package module beside the package's own
    (bench/baseline_module.py) and alternate the two, call by call: python_path_ab_probe.py
    sinkhorn() (_functional.py), autograd_backward_ab_probe.py the plain Function's backward
    (_autograd.py). Here the current file runs against itself, a few rounds."""
    import flashsinkhorn

    baseline = Path(flashsinkhorn.__file__).parent / module
    out = tmp_path / "ab.json"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    subprocess.run([sys.executable, str(STUDIES.parent / probe), "--baseline", str(baseline), *run, "--out", str(out)],
                   check=True, env=env, capture_output=True, text=True, timeout=300)
    report = json.loads(out.read_text())
    assert set(report[medians]) == {"baseline", "current"}
    assert all(v > 0 for v in report[medians].values())
    if probe == "python_path_ab_probe.py":
        assert set(report["cold_median_us"]) == {"baseline", "current"}


def test_the_path_probe_on_cuda_tensors_runs_or_skips_cleanly(tmp_path):
    """python_path_ab_probe.py --cuda: the A/B on CUDA tensors where a GPU and a CUDA core are present
    (a few rounds, the current file against itself), else it says why and exits 0."""
    import torch

    import flashsinkhorn
    baseline = Path(flashsinkhorn.__file__).parent / "_functional.py"
    out = tmp_path / "ab.json"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    done = subprocess.run([sys.executable, str(STUDIES.parent / "python_path_ab_probe.py"), "--baseline", str(baseline),
                           "--cuda", "--rounds", "2", "--warm", "5", "--out", str(out)],
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    if torch.cuda.is_available() and flashsinkhorn.cuda_available():
        report = json.loads(out.read_text())
        assert report["inputs"] == "CUDA torch tensors" and all(v > 0 for v in report["warm_median_us"].values())
    else:
        assert "needs torch.cuda and a core built with CUDA; skipped" in done.stdout and not out.exists()


def test_cuda_call_breakdown_skips_cleanly_without_a_gpu(tmp_path):
    """bench/studies/cuda_call_breakdown.py imports what it times (the package's private steps) and,
    without torch.cuda or a CUDA core, says so and exits 0; on the device it runs in gpu_check's
    overhead stage."""
    import torch

    import flashsinkhorn
    if torch.cuda.is_available() and flashsinkhorn.cuda_available():
        pytest.skip("a GPU is present: the study runs in tools/gpu_check.sh's overhead stage")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    done = subprocess.run([sys.executable, str(STUDIES / "cuda_call_breakdown.py"), "--out", str(tmp_path / "b.jsonl")],
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "needs torch.cuda and a core built with CUDA; skipped" in done.stdout


def test_gradient_call_breakdown_skips_cleanly_without_a_gpu(tmp_path):
    """bench/studies/gradient_call_breakdown.py needs torch.cuda and a CUDA core; without them it says
    so and exits 0 (on the device it runs in gpu_check's overhead stage, OVERHEAD_GRADIENT)."""
    import torch

    import flashsinkhorn
    if torch.cuda.is_available() and flashsinkhorn.cuda_available():
        pytest.skip("a GPU is present: the study runs in tools/gpu_check.sh's overhead stage")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    done = subprocess.run([sys.executable, str(STUDIES / "gradient_call_breakdown.py"), "--out",
                           str(tmp_path / "g.jsonl")], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "needs torch.cuda and a core built with CUDA; skipped" in done.stdout


def test_hvp_stage_errors_on_the_cpu():
    """Each stage's error against the CPU's float64 one: tiny n, a large ε; float64 against itself is
    exact to roundoff, fp32 is not, and every stage is reported."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    done = subprocess.run([sys.executable, str(STUDIES / "hvp_stage_errors.py"), "--n", "60", "--eps", "0.5",
                           "--configs", "cpu:fp64", "cpu:fp32", "--preconditioners", "diagonal"],
                          check=True, env=env, capture_output=True, text=True, timeout=300)
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    assert [(r["device"], r["precision"]) for r in rows] == [("cpu", "fp64"), ("cpu", "fp32")]
    fp64, fp32 = rows
    assert fp64["plan_v"] < 1e-12 and fp64["hvp_full_diagonal"]["relative"] < 1e-10
    assert 0 < fp32["plan_v"] < 1e-3
    for row in rows:
        assert row["converged"] and row["hvp_implicit_diagonal"]["converged"]


def test_cpu_plan_pass_bench_runs_small(tmp_path):
    """bench/cpu_plan_pass_bench.py at toy sizes: a gradient row and an HVP row per dtype, with the
    gradient's norm and the CG's counts filled in."""
    out = tmp_path / "plan.jsonl"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    subprocess.run([sys.executable, str(STUDIES.parent / "cpu_plan_pass_bench.py"), "--sizes", "40x3", "--hvp", "30x2",
                    "--repeats", "1", "--label", "test", "--out", str(out)],
                   check=True, env=env, capture_output=True, text=True, timeout=300)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["op"], r["dtype"]) for r in rows] == [("gradient", "float32"), ("gradient", "float64"),
                                                      ("hvp", "float32"), ("hvp", "float64")]
    for r in rows[:2]:
        assert r["half_step_ms"] > 0 and r["gradient_x_ms"] > 0 and r["gradient_x_norm"] > 0
    for r in rows[2:]:
        assert r["cg_iterations"] >= 1 and r["plan_passes"] >= r["cg_iterations"] and r["hvp_norm"] > 0
    assert all(r["label"] == "test" and r["benchmark"] == "cpu_plan_pass" for r in rows)


def run_study(script: str, *arguments: str) -> str:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    return subprocess.run([sys.executable, str(STUDIES / script), *arguments], check=True, env=env,
                          capture_output=True, text=True, timeout=300).stdout


def test_hvp_trace_sums_the_traced_product_calls():
    """One traced product's backend calls summed by name, then the product's report."""
    text = run_study("hvp_trace.py", "--n", "60", "--d", "8", "--precision", "fp32")
    assert "plan_rows" in text and "host time between calls" in text
    assert "=== product" in text and "CG iterations" in text


def test_repeated_hvp_reports_each_product_of_one_solve():
    text = run_study("repeated_hvp.py", "--n", "60", "--d", "8", "--products", "2")
    assert "product 1:" in text and "product 2:" in text and "product 3:" not in text


def test_hvp_preconditioners_times_each_preconditioner_on_one_solve(tmp_path):
    """One row a preconditioner, the same product from each (CG to the suite's 2e-5)."""
    out = tmp_path / "preconditioners.json"
    text = run_study("hvp_preconditioners.py", "--n", "60", "--d", "3", "--repeats", "2", "--out", str(out))
    assert "sparse:" in text and "diagonal:" in text
    record = json.loads(out.read_text())
    rows = {r["preconditioner"]: r for r in record["rows"]}
    assert set(rows) == {"sparse", "diagonal"} and record["n"] == 60 and record["commit"]
    assert all(len(r["ms_all"]) == 2 and r["ms"] > 0 and r["relative_residual"] <= 2e-5 for r in rows.values())
    assert rows["sparse"]["product_norm"] == pytest.approx(rows["diagonal"]["product_norm"], rel=1e-3)


def test_near_matching_predictor_prints_a_row_per_problem():
    text = run_study("near_matching_predictor.py", "--ns", "50", "--ds", "3,8", "--epss", "0.1")
    rows = [line for line in text.splitlines()[1:] if line.strip()]
    assert len(rows) == 2 and all(row.split()[7] in ("True", "False") for row in rows)


def test_single_precision_shortfall_on_the_cpu(tmp_path):
    """One JSON row a case, the product's report beside the plan's statistics (shares and leaks in
    [0, 1]); a blurry plan (ε = 10 on 60 points) has no row that float32 sees as a single match."""
    out = tmp_path / "shortfall.jsonl"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    subprocess.run([sys.executable, str(STUDIES / "single_precision_shortfall.py"), "--ns", "60", "--ds", "8",
                    "--eps", "0.05,10", "--precisions", "fp32", "--out", str(out)],
                   check=True, env=env, capture_output=True, text=True, timeout=300)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["n"], r["d"], r["eps"], r["precision"]) for r in rows] == [(60, 8, 0.05, "fp32"), (60, 8, 10.0, "fp32")]
    for r in rows:
        assert isinstance(r["redone_in_float64"], bool) and r["cg_iterations"] > 0
        assert 0 <= r["rows_leak_below_1e-6"] <= 1 and 0 <= r["leak_p10"] <= r["leak_median"] < 1
        assert 0 <= r["rows_entropy_below_1e-5"] <= 1
    assert rows[1]["rows_leak_below_1e-6"] == 0 and rows[1]["rows_entropy_below_1e-5"] == 0
    assert rows[1]["leak_median"] > 0.5
