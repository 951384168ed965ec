"""bench/suite/run.py's process-per-group runner and stop rule, on a fake driver (suite_fake_driver.py):
no GPU and no peer library. Each test runs the suite as a subprocess and reads the JSON lines it appends.

The fake implementations come in through FS_SUITE_TEST_IMPLS (run.py's hook for these tests); every one
succeeds at n = 100 and, from n = 400 on, sleeps, dies by a signal, raises an out-of-memory error, raises
an error or declares the mode unsupported. torch is hidden from the suite's processes (a module on
PYTHONPATH that raises ImportError): the fake driver needs none, and a child then starts in a fraction of
a second instead of seconds (protocol.versions() would import it once per group)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
RUN = HERE.parents[1] / "bench" / "suite" / "run.py"
VARIANTS = ("fake-ok", "fake-sleep", "fake-sleep-timed", "fake-crash", "fake-oom", "fake-error", "fake-unsupported",
            "fake-slow-start", "fake-allocate", "fake-counted")
NS = (100, 400, 800)


def suite(tmp_path: Path, impls: str, *extra: str, timeout: float = 120) -> tuple[list[dict], float, str]:
    """Runs the sweep over `impls` (forward, d = 2, fp32, CPU); its rows, wall seconds and stderr."""
    out = tmp_path / "suite.jsonl"
    no_torch = tmp_path / "no_torch"
    no_torch.mkdir()
    (no_torch / "torch.py").write_text('raise ImportError("hidden by tests/python/test_bench_suite.py")\n')
    path = (str(no_torch), str(HERE), os.environ.get("PYTHONPATH"))
    env = dict(os.environ, FS_SUITE_TEST_IMPLS=json.dumps({v: ["suite_fake_driver", ["fp32"]] for v in VARIANTS}),
               PYTHONPATH=os.pathsep.join(p for p in path if p), FS_COMMIT="test")
    command = [sys.executable, str(RUN), "--impls", impls, "--ops", "forward", "--device", "cpu",
               "--precisions", "fp32", "--ds", "2", "--ns", ",".join(map(str, NS)), "--no-eval",
               "--out", str(out), "--data-dir", str(tmp_path / "data"), *extra]
    began = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout)
    elapsed = time.perf_counter() - began
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()] if out.exists() else []
    return rows, elapsed, done.stderr


def test_rows_record_the_kernel_choices_read_from_the_environment(tmp_path, monkeypatch):
    """A row measured under FLASHSINKHORN_POINT_GRADIENT=narrow (or another of the library's kernel
    switches) says so in its machine record; without one the record has no such entry."""
    for name in [k for k in os.environ if k.startswith("FLASHSINKHORN_") and k != "FLASHSINKHORN_BIN"]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("FLASHSINKHORN_POINT_GRADIENT", "narrow")
    rows, _, _ = suite(tmp_path, "fake-ok")
    assert rows and all(r["machine"]["flashsinkhorn_env"] == {"FLASHSINKHORN_POINT_GRADIENT": "narrow"} for r in rows)
    monkeypatch.delenv("FLASHSINKHORN_POINT_GRADIENT")
    plain = tmp_path / "plain"
    plain.mkdir()
    rows, _, _ = suite(plain, "fake-ok")
    assert rows and all("flashsinkhorn_env" not in r["machine"] for r in rows)


def statuses(rows: list[dict], impl: str | None = None) -> list[tuple[int, str]]:
    return [(r["n"], r["status"]) for r in rows if impl is None or r["impl"] == impl]


def test_ok_group_runs_every_n_in_order_in_one_process(tmp_path):
    rows, _, _ = suite(tmp_path, "fake-ok")
    assert statuses(rows) == [(100, "ok"), (400, "ok"), (800, "ok")]
    for row in rows:
        assert row["suite"] == "flashsinkhorn-bench-suite" and row["commit"] == "test"
        assert (row["impl"], row["op"], row["d"], row["precision"], row["device"]) == \
            ("fake-ok", "forward", 2, "fp32", "cpu")
        assert row["ms"] == 1.0 and row["wall_s"] >= 0 and "python" in row["versions"]
        assert "torch" not in row["versions"]  # hidden: see the module's docstring
    # Only the group's first case pays for the process's start and imports.
    assert "wall_includes" in rows[0]
    assert all("wall_includes" not in r for r in rows[1:])


def test_timeout_kills_the_group_and_skips_larger_n(tmp_path):
    budget = 3  # the first case includes the child's start and imports
    rows, elapsed, _ = suite(tmp_path, "fake-sleep", "--budget", str(budget))
    assert statuses(rows) == [(100, "ok"), (400, "timeout"), (800, "skipped")]
    assert f"{budget:g} s budget" in rows[1]["error"]
    assert budget - 1 < rows[1]["wall_s"] < budget + 10  # from the case's announcement, just after the limit starts
    assert "n = 400" in rows[2]["reason"] and "timeout" in rows[2]["reason"]
    assert elapsed < 30, "the sleeping child was not killed"
    assert rows[1]["timed_out_in"].startswith("the first call")  # it slept before any call was done


def test_a_timeout_names_the_phase_it_happened_in(tmp_path):
    # fake-sleep-timed finishes its first call (4.5 ms, announced) and then sleeps in the timed calls
    rows, _, _ = suite(tmp_path, "fake-sleep-timed", "--budget", "3")
    assert statuses(rows) == [(100, "ok"), (400, "timeout"), (800, "skipped")]
    assert rows[1]["timed_out_in"] == "the timed calls" and rows[1]["first_call_ms"] == 4.5


def test_crash_is_recorded_with_the_exit_status(tmp_path):
    rows, _, _ = suite(tmp_path, "fake-crash")
    assert statuses(rows) == [(100, "ok"), (400, "crash"), (800, "skipped")]
    assert "exit status" in rows[1]["error"] and "signal 9" in rows[1]["error"]
    assert "stderr_tail" in rows[1]
    assert "n = 400" in rows[2]["reason"]


def test_oom_is_recorded_with_the_message(tmp_path):
    rows, _, _ = suite(tmp_path, "fake-oom")
    assert statuses(rows) == [(100, "ok"), (400, "oom"), (800, "skipped")]
    assert "out of memory" in rows[1]["error"] and rows[1]["error"].startswith("RuntimeError")
    assert "n = 400" in rows[2]["reason"] and "oom" in rows[2]["reason"]


def test_memory_limit_caps_the_case_process(tmp_path):
    """--memory-limit 1: a 2 GiB allocation fails in the child with MemoryError, recorded as oom (the
    kernel's OOM killer never gets involved); the rows carry the cap."""
    rows, _, _ = suite(tmp_path, "fake-allocate", "--memory-limit", "1")
    assert statuses(rows) == [(100, "ok"), (400, "oom"), (800, "skipped")]
    assert rows[1]["error"].startswith("MemoryError") and all(r["memory_limit_gb"] == 1 for r in rows)


def test_error_is_recorded_with_the_exception_text(tmp_path):
    rows, _, _ = suite(tmp_path, "fake-error")
    assert statuses(rows) == [(100, "ok"), (400, "error"), (800, "skipped")]
    assert rows[1]["error"] == "ValueError: boom"
    assert "ValueError" in rows[1]["traceback"]
    assert "n = 400" in rows[2]["reason"]


def test_an_implementation_without_the_asked_precisions_is_named(tmp_path):
    """GeomLoss online has no tf32: a tf32 sweep plans no case for it, and says so on stderr."""
    rows, _, stderr = suite(tmp_path, "fake-ok", "--precisions", "tf32")
    assert rows == [] and "run.py: fake-ok plans no case: it runs fp32, not tf32" in stderr


def test_unsupported_is_not_a_failure(tmp_path):
    rows, _, _ = suite(tmp_path, "fake-unsupported")
    assert statuses(rows) == [(100, "ok"), (400, "unsupported"), (800, "unsupported")]
    assert rows[1]["reason"] == rows[2]["reason"] == "no such mode"


def test_an_implementation_limited_to_some_operations_plans_no_other_case(tmp_path):
    """flashsinkhorn-py-relaxed (run.py's OPS_OF) times convergence only: a forward sweep writes no row for
    it, beside the rows of an implementation that has every operation."""
    rows, _, _ = suite(tmp_path, "flashsinkhorn-py-relaxed,fake-ok")
    assert {r["impl"] for r in rows} == {"fake-ok"}
    assert len(rows) == len(NS)


def test_deadline_passed_leaves_every_case_not_run(tmp_path):
    rows, _, _ = suite(tmp_path, "fake-ok,fake-crash", "--deadline", "0")
    assert statuses(rows) == [(n, "not_run") for n in NS] * 2
    assert all("deadline" in r["reason"] for r in rows)


def test_one_group_failing_leaves_the_other_alone(tmp_path):
    rows, _, stderr = suite(tmp_path, "fake-crash,fake-ok")
    assert statuses(rows, "fake-crash") == [(100, "ok"), (400, "crash"), (800, "skipped")]
    assert statuses(rows, "fake-ok") == [(100, "ok"), (400, "ok"), (800, "ok")]
    assert len(rows) == 6
    # Each group has a process of its own: the second group's first case pays for the start again.
    assert "wall_includes" in next(r for r in rows if r["impl"] == "fake-ok" and r["n"] == 100)
    assert stderr.count("fake-ok") == 3


def test_the_first_case_may_take_the_start_up_allowance(tmp_path):
    # A 4 s first case: within a 2 s budget plus 5 s of start-up, not within the budget alone.
    rows, _, _ = suite(tmp_path, "fake-slow-start", "--budget", "2", "--start-up", "5")
    assert statuses(rows) == [(100, "ok"), (400, "ok"), (800, "ok")]
    (tmp_path / "strict").mkdir()
    rows, _, _ = suite(tmp_path / "strict", "fake-slow-start", "--budget", "2", "--start-up", "0")
    assert statuses(rows) == [(100, "timeout"), (400, "skipped"), (800, "skipped")]


def test_hvp_cases_take_the_longer_forward(tmp_path):
    # protocol.HVP_ITERS iterations before an HVP (issue 5's protocol), ITERS before the others
    rows, _, _ = suite(tmp_path, "fake-ok", "--ops", "forward,hvp", "--iters", "10", "--hvp-iters", "50")
    given = {(r["op"], r["iterations_given"]) for r in rows}
    assert given == {("forward", 10), ("hvp", 50)}


def test_skip_done_runs_only_the_gaps_of_the_grid(tmp_path):
    """--skip-done: a case measured before (a final status in the given files) is not run again, nor a
    larger n of a group that a timeout, OOM or crash ended; a new size is."""
    runs = [tmp_path / name for name in ("first", "again", "grown")]
    for run in runs:
        run.mkdir()
    first, _, _ = suite(runs[0], "fake-crash,fake-ok")
    assert statuses(first, "fake-crash") == [(100, "ok"), (400, "crash"), (800, "skipped")]
    earlier = str(runs[0] / "suite*.jsonl")
    again, _, stderr = suite(runs[1], "fake-crash,fake-ok", "--skip-done", earlier)
    assert again == []
    assert "not rerun: measured before (crash)" in stderr and "not rerun: n = 400 ended its group before" in stderr
    grown, _, _ = suite(runs[2], "fake-ok", "--ns", "100,400,800,1600", "--skip-done", earlier)
    assert statuses(grown) == [(1600, "ok")]


def test_reach_mode_makes_one_call_per_case(tmp_path):
    """run.py --reach (the largest n within the budget): one call per case, its time the row's, the
    rows marked; without it the protocol's warm-up, sizing call and timed repeats."""
    rows, _, _ = suite(tmp_path, "fake-counted", "--reach", "--repeats", "5")
    assert statuses(rows) == [(100, "ok"), (400, "ok"), (800, "ok")]
    for row in rows:
        assert row["calls"] == 1 and row["reach"] is True and row["repeats"] == 1 and row["warmup"] == 0
        assert row["ms"] == row["first_call_ms"] and row["timer"].startswith("the first and only call")
        assert row["evaluate"] is False
    plain = tmp_path / "plain"
    plain.mkdir()
    rows, _, _ = suite(plain, "fake-counted", "--repeats", "5")
    assert all(r["calls"] == 7 and r["reach"] is False for r in rows)  # first, sizing, five timed


def run_lanes(tmp_path: Path, lanes: str, **settings: str) -> subprocess.CompletedProcess:
    """bench/suite/run_lanes.sh over the fake drivers on the CPU, torch hidden, results under
    tmp_path/out (tag 't'), logs under tmp_path/logs; `settings` add SUITE_* variables."""
    no_torch = tmp_path / "no_torch"
    no_torch.mkdir()
    (no_torch / "torch.py").write_text('raise ImportError("hidden by tests/python/test_bench_suite.py")\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith("SUITE_")}
    env.update(FS_SUITE_TEST_IMPLS=json.dumps({v: ["suite_fake_driver", ["fp32"]] for v in VARIANTS}),
               PYTHONPATH=os.pathsep.join(p for p in (str(no_torch), str(HERE), os.environ.get("PYTHONPATH")) if p),
               FS_COMMIT="test", OUT=str(tmp_path / "out"), SUITE_LOG_DIR=str(tmp_path / "logs"), SUITE_TAG="t",
               SUITE_DEVICE="cpu", SUITE_PRECISIONS="fp32", SUITE_CPP="0", SUITE_DEADLINE="100",
               SUITE_LANES=lanes, FS_SUITE_DATA=str(tmp_path / "data"), **settings)
    return subprocess.run(["bash", str(RUN.parent / "run_lanes.sh")], env=env, capture_output=True, text=True,
                          timeout=300)


def test_lanes_on_one_gpu_run_one_after_another(tmp_path):
    """bench/suite/run_lanes.sh with more lanes than GPUs (none here, one on the device): the lanes of a
    GPU run in sequence, so a slow first lane finishes before a fast second one starts — side by side
    they would time each other's work."""
    done = run_lanes(tmp_path, "IMPLS=fake-slow-start NS=100 DS=2 OPS=forward; IMPLS=fake-ok NS=100 DS=2 OPS=forward",
                     SUITE_KEOPS_DOCTOR="0")
    assert done.returncode == 0, done.stdout + done.stderr
    first, second = ([json.loads(line) for line in (tmp_path / "out" / f"suite_t_lane{k}.jsonl").read_text().splitlines()]
                     for k in (0, 1))
    assert statuses(first) == [(100, "ok")] and statuses(second) == [(100, "ok")]
    # the first lane sleeps 4 s in its case; the second's row comes after it (dates to the second)
    assert second[0]["date"] >= first[0]["date"], (first[0]["date"], second[0]["date"])


def test_lanes_without_geomloss_online_start_no_keops_doctor(tmp_path):
    """run_lanes.sh tries KeOps's configurations only where a lane runs GeomLoss online (a lane without
    IMPLS runs all ten): in session 47 a reach call of other peers ran the doctor beside its lanes."""
    done = run_lanes(tmp_path, "IMPLS=fake-ok NS=100 DS=2 OPS=forward")  # the doctor's switch left unset
    assert done.returncode == 0, done.stdout + done.stderr
    assert statuses([json.loads(line) for line in (tmp_path / "out" / "suite_t_lane0.jsonl").read_text().splitlines()]) \
        == [(100, "ok")]
    assert not (tmp_path / "logs" / "keops_doctor.log").exists()


def keops_doctor():
    """bench/suite/keops_doctor.py as a module."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("keops_doctor", RUN.parent / "keops_doctor.py")
    doctor = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(doctor)
    return doctor


def test_keops_doctor_tries_the_compilers_libstdcxx_first(tmp_path):
    """The configuration that passed on the GPU machine (session 48) comes first, with the runtime of
    the g++ on PATH preloaded ahead of any LD_PRELOAD already set; the fallbacks follow."""
    doctor = keops_doctor()
    runtime = doctor.compiler_runtime()
    if runtime is None:
        pytest.skip("no g++ naming its libstdc++ here")
    configs = doctor.configurations({"LD_PRELOAD": "/x/libother.so"}, str(tmp_path / "none"), str(tmp_path / "none"))
    names = [name for name, _, _ in configs]
    assert names == ["pykeops-2.3+compiler-libstdc++", "pykeops-2.3", "pykeops-2.3+cuda-env"]
    assert configs[0][1]["LD_PRELOAD"] == f"{runtime} /x/libother.so" and Path(runtime).name.startswith("libstdc++")


def test_keops_doctor_preloads_a_staged_nvrtc(tmp_path):
    """The pykeops-2.3+nvrtc-V configuration: the staged archive's libnvrtc unpacked, preloaded ahead
    of any LD_PRELOAD already set, and its folder searched first (where NVRTC finds its builtins)."""
    import tarfile
    doctor = keops_doctor()
    tree = tmp_path / "tree" / "nvidia" / "cu13" / "lib"
    tree.mkdir(parents=True)
    (tree / "libnvrtc.so.13").write_bytes(b"")
    (tree / "libnvrtc-builtins.so.13.5").write_bytes(b"")
    archive = tmp_path / "nvidia_cuda_nvrtc-99.1.2.tar.xz"
    with tarfile.open(archive, "w:xz") as tar:
        tar.add(tmp_path / "tree" / "nvidia", arcname="nvidia")
    version, lib = doctor.unpacked_nvrtc(archive, str(tmp_path / "out"))
    assert version == "99.1.2" and Path(lib, "libnvrtc-builtins.so.13.5").is_file()
    env = doctor.preloaded(lib, {"LD_PRELOAD": "/x/libother.so", "LD_LIBRARY_PATH": "/y"})
    assert env == {"LD_PRELOAD": f"{lib}/libnvrtc.so.13 /x/libother.so", "LD_LIBRARY_PATH": f"{lib}{os.pathsep}/y"}
