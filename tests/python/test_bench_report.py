"""bench/suite/report.py on fixture results: the tables, the claims and the plots are produced, so the
report cannot rot while no new results arrive. Nothing here measures anything."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

REPORT = Path(__file__).resolve().parents[2] / "bench" / "suite" / "report.py"


def load_report():
    spec = importlib.util.spec_from_file_location("bench_report", REPORT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def write_fixture(results: Path) -> None:
    results.mkdir()
    ours = {"impl": "flashsinkhorn", "kernel": "wgmma-tma", "n": 10000, "m": 10000, "d": 64, "precision": "tf32",
            "iterations": 10, "ms_per_iteration": 0.15, "roofline_floor_ms": 0.065, "roofline_fraction": 0.43,
            "device_bytes": 10485760, "finite": True}
    peer = {"impl": "flash-sinkhorn", "n": 10000, "m": 10000, "d": 64, "precision": "tf32", "iterations": 10,
            "ms_per_iteration": 0.45, "peak_bytes": 18001408}
    slow = {**ours, "n": 50000, "ms_per_iteration": 3.0, "roofline_floor_ms": 1.62}
    slow_peer = {**peer, "n": 50000, "ms_per_iteration": 4.5}
    (results / "gpu_forward_2099-01-01.json").write_text(json.dumps(
        {"benchmark": "gpu_forward", "commit": "abc1234", "date": "2099-01-01T00:00:00+00:00", "machine": "fixture",
         "rows": [ours, peer, slow, slow_peer]}))
    (results / "cpu_forward_2099-01-01.json").write_text(json.dumps(
        {"benchmark": "cpu_forward", "commit": "abc1234", "date": "2099-01-01", "machine": {"model_name": "fixture"},
         "results": [{"name": "flashsinkhorn", "precision": "fp32", "n": 5000, "d": 64, "iters": 100, "seconds": 6.0,
                      "peak_rss_mb": 43.0},
                     {"name": "pot", "precision": "fp32", "n": 5000, "d": 64, "iters": 100, "seconds": 55.0,
                      "peak_rss_mb": 1400.0}]}))
    header = {"suite": "flashsinkhorn-bench-suite", "schema": 1, "machine": {"gpu": "fixture GPU"}, "commit": "abc1234",
              "date": "2099-01-01T00:00:00+00:00", "command": "run.py (fixture)", "device": "cuda", "precision": "tf32",
              "d": 64}
    suite = [
        {**header, "impl": "flashsinkhorn-py", "op": "forward", "n": 10000, "status": "ok", "ms": 1.6,
         "ms_per_iteration": 0.16, "marginal_error": 0.05, "peak_device_bytes_smi": 3 << 20},
        {**header, "impl": "flash-sinkhorn", "op": "forward", "n": 10000, "status": "ok", "ms": 4.8,
         "ms_per_iteration": 0.46, "marginal_error": 0.05, "peak_device_bytes": 18 << 20},
        {**header, "impl": "geomloss-tensorized", "op": "forward", "n": 10000, "status": "oom",
         "error": "OutOfMemoryError: CUDA out of memory"},
        {**header, "impl": "geomloss-tensorized", "op": "forward", "n": 50000, "status": "skipped",
         "reason": "n = 10000 ended with status oom"},
        {**header, "impl": "flashsinkhorn-py", "op": "converge", "n": 10000, "status": "ok", "ms": 20.0,
         "marginal_error": 9e-5, "reached_tol": True},
        {**header, "impl": "flashsinkhorn", "kernel": "wgmma-tma", "n": 10000, "precision": "tf32",
         "forward_gradient_ms": 2.0, "suite": "flashsinkhorn-bench-suite"},
    ]
    suite[-1].pop("op", None)
    suite.append({**header, "impl": "flash-sinkhorn", "op": "forward_gradient", "n": 10000, "status": "ok", "ms": 6.0})
    (results / "suite_2099-01-01.jsonl").write_text("".join(json.dumps(r) + "\n" for r in suite))
    (results / "unrelated_2099.json").write_text(json.dumps({"benchmark": "something_else"}))

    hvp_header = {"bench": "bench/hvp_bench.sh", "commit": "abc1234", "machine": "fixture GPU", "date": "2099-01-01",
                  "command": "hvp_bench.sh (fixture)", "protocol": "fixture protocol"}
    hvp = [hvp_header,
           {"n": 10000, "d": 64, "precision": "tf32", "part": "full", "cg_ridge": 0.01, "cg_tolerance": 1e-4,
            "cg_iterations": 38, "cg_relative_residual": 8.3e-5, "cg_converged": True, "hvp_seconds": 0.02},
           {"n": 10000, "d": 64, "precision": "tf32", "part": "full", "cg_ridge": 0, "cg_tolerance": 1e-4,
            "cg_iterations": 500, "cg_relative_residual": 2.5e-2, "cg_converged": False, "hvp_seconds": 0.4},
           {"n": 10000, "d": 64, "precision": "tf32", "part": "full", "cg_ridge": 0.01, "cg_tolerance": 2e-5,
            "cg_iterations": 45, "cg_relative_residual": 1.8e-5, "cg_converged": True, "hvp_seconds": 0.024},
           {"impl": "flash-sinkhorn", "n": 10000, "d": 64, "allow_tf32": True, "ms_forward_hvp": 60.0,
            "ms_forward": 15.0, "ms_hvp_only": 45.0, "cg_iterations": 43, "cg_relative_residual": 2.2e-5,
            "ms_first_call": 90000.0}]
    (results / "hvp_h200_2099-01-01.jsonl").write_text("".join(json.dumps(r) + "\n" for r in hvp))
    agreement = [{"bench": "bench/hvp_agreement.py", "commit": "abc1234", "machine": "fixture GPU", "date": "2099-01-01",
                  "command": "hvp_agreement.py (fixture)"},
                 {"n": 10000, "d": 64, "sinkhorn_iterations": 2000, "our_marginal_error": 2.2e-4, "our_norm": 1.809,
                  "their_norm": 1.814, "relative_difference": 0.0592}]
    (results / "hvp_agreement_2099-01-01.jsonl").write_text("".join(json.dumps(r) + "\n" for r in agreement))
    keops = {"config": "pykeops-2.3", "status": "crash", "returncode": -11, "stdout_tail": "pykeops 2.3\n[KeOps] "
             "Generating code ...", "stderr_tail": "Fatal Python error: Segmentation fault"}
    diagnostic = {"config": "pykeops-2.3-numpy", "status": "ok", "returncode": 0, "diagnostic": "no torch",
                  "stdout_tail": "pykeops 2.3\nmapped:\n  /usr/local/cuda/lib64/libnvrtc.so.13\nmax abs error 1e-6",
                  "binder_links": ["nvrtc_jit.so: libnvrtc.so.13 => /usr/local/cuda/lib64/libnvrtc.so.13 (0x7f00)"]}
    traced = {"config": "pykeops-2.3-numpy", "status": "crash", "returncode": -11, "diagnostic": "no torch",
              "stdout_tail": "[KeOps] Generating code ...",
              "stderr_tail": 'Fatal Python error: Segmentation fault\n\nCurrent thread 0x7f (most recent call first):\n'
                             '  File "/tmp/site/keopscore/binders/nvrtc/Gpu_link_compile.py", line 78 in generate_code\n'
                             '  File "/tmp/site/keopscore/binders/LinkCompile.py", line 103 in get_dll_and_params\n',
              "native_backtrace": {"signal": "Program received signal SIGSEGV", "frames": [
                  "#0  0x00007f01 in ?? () from /usr/local/cuda/lib64/libnvrtc.so.13",
                  "#1  0x00007f02 in nvrtcCompileProgram () from /usr/local/cuda/lib64/libnvrtc.so.13",
                  "#2  0x00007f03 in Compile (target_file_name=0x1, cu_code=0x2) at /tmp/nvrtc_jit.cpp:93"]},
              "binder_links": ["nvrtc_jit.so: links no CUDA library"]}
    (results / "suite_2099-01-01_keops.jsonl").write_text("".join(json.dumps(r) + "\n" for r in (keops, diagnostic, traced)))


def write_later_run(results: Path, name: str, rows: list[dict], machine: dict | None = None, **fields) -> None:
    """A second suite file beside the fixture's, one day later: `rows` over its header (forward,
    d = 64, tf32, CUDA, the fixture GPU unless `machine`), `fields` added to every row."""
    header = {"suite": "flashsinkhorn-bench-suite", "schema": 1, "machine": machine or {"gpu": "fixture GPU"},
              "commit": "def5678", "date": "2099-01-02T00:00:00+00:00", "device": "cuda", "precision": "tf32",
              "d": 64, "op": "forward", **fields}
    (results / name).write_text("".join(json.dumps({**header, **r}) + "\n" for r in rows))


def test_report_writes_tables_claims_and_plots(tmp_path):
    report = load_report()
    results, markdown, plots = tmp_path / "results", tmp_path / "BENCHMARKS.md", tmp_path / "plots"
    write_fixture(results)
    text = report.render(results, markdown, plots)
    assert markdown.read_text() == text
    # the forward table and the claim with its verdicts (3.00× met at 10,000; 1.50× short by 1.33×)
    assert "| 10,000 | 64 | tf32 | wgmma-tma | 0.15 | 0.45 | 3.00× |" in text
    assert "short by 1.33×" in text and "| met |" in text
    # the suite: statuses recorded as such, ratios to ours, the marginal error, the largest n reached
    assert "OOM" in text and "skipped" in text
    assert "4.8 (3.00×)" in text  # 4.8 ms / 1.6 ms
    assert "9.0e-05" in text
    assert "| geomloss-tensorized | forward | 64 | gpu | tf32 | none | oom at n = 10,000 |" in text
    # forward + gradient from the stamped C++ row against the peer: 6.0 / 2.0, judged as kernels only
    # (no end-to-end row of ours in the fixture)
    assert "| 10,000 | 64 | tf32 | – | 3.00× | met (kernels only) |" in text
    assert "| 10,000 | 64 | tf32 | 3.00× | – | met |" in text  # the forward: end to end (the Python package, 1.6 ms)
    # the CPU section and the sources with their commands; the unknown file listed, not converted
    assert "| pot-dense-log | 5,000 | 64 | fp32 | 100 | 55 s | 9.17× |" in text
    assert "`run.py (fixture)`" in text and "`unrelated_2099.json`" in text
    # the HVP section: our runs, the peer's, and the claim (60 ms / 20 ms = 3.00×, short of 5× by 1.7×;
    # with our forward of 50 × 0.15 ms from the fixture's forward file: 60 / 27.5 = 2.18×)
    assert "| 10,000 | 64 | tf32 | full | 0.01 | diagonal | 1e-04 | 38 | 8.3e-05 | yes | 20 | `abc1234` |" in text
    assert "| 10,000 | 64 | tf32 | full | exact | diagonal | 1e-04 | 500 | 2.5e-02 | no | 400 | `abc1234` |" in text
    # (its HVP alone, its forward timed apart: 45 / 20 = 2.25×)
    assert ("| 10,000 | 64 | tf32 vs tf32 | diagonal | 1e-04 | 20 | 60 | 3.00× | short by 1.7× | 2.25× (45 ms) | "
            "2.18× (27.5 ms,") in text
    # the two products' agreement, and its file among the sources (not "not converted")
    assert "| 10,000 | 64 | 2000 | 2.2e-04 | 1.809 | 1.814 | 0.0592 |" in text
    assert "`hvp_agreement_2099-01-01.jsonl` | hvp agreement |" in text
    assert "`hvp_h200_2099-01-01.jsonl` | hvp |" in text
    # KeOps's configurations with their exact outcome (not listed as an unconverted file)
    assert ("| `suite_2099-01-01_keops.jsonl` | pykeops-2.3 | crash | -11 | `[KeOps] Generating code ...` | "
            "Fatal Python error: Segmentation fault | – | – |") in text
    # the diagnostic attempt is marked as such, with the libnvrtc it mapped and its binder links to
    assert ("| pykeops-2.3-numpy (diagnostic, never used by GeomLoss) | ok | 0 | `max abs error 1e-6` | – | – | "
            "/usr/local/cuda/lib64/libnvrtc.so.13 / /usr/local/cuda/lib64/libnvrtc.so.13 |") in text
    # a traced crash: its innermost Python frame, then cuda-gdb's native frames, innermost first
    assert ("| crash | -11 | `[KeOps] Generating code ...` | Gpu_link_compile.py:78 in generate_code | "
            "?? (libnvrtc.so.13) ← nvrtcCompileProgram (libnvrtc.so.13) ← Compile (nvrtc_jit.cpp) | – / none |") in text
    assert "`suite_2099-01-01_keops.jsonl`," not in text and "`suite_2099-01-01_keops.jsonl`\n" not in text
    # the grid's coverage: the OOM, then the stop rule's skipped size, counted apart from ok
    coverage = text[text.index("### Coverage of the grid"):]
    assert "| geomloss-tensorized | forward | – | 0 ok, 1 failed, 1 skipped |" in coverage
    assert "| flash-sinkhorn | forward | – | 1 ok |" in coverage
    # the claim in "Claims checked": our row at the tolerance the peer reached (2e-5 ≤ 2.2e-5): 60 / 24 ms,
    # and with our forward (50 × 0.15 ms) 60 / 31.5 ms
    # and against its HVP alone 45 / 24 ms
    assert ("ours 24 ms, theirs 60 ms: **2.50×**, short by 2.00×; against its HVP alone (45 ms, its forward timed "
            "apart) 1.88×, short by 2.67×; with our forward of 50 iterations added, 1.90×.") in text


def test_report_plots(tmp_path):
    pytest.importorskip("matplotlib")
    report = load_report()
    results = tmp_path / "results"
    write_fixture(results)
    report.render(results, tmp_path / "BENCHMARKS.md", tmp_path / "plots")
    for name in ("time_vs_n.png", "memory_vs_n.png", "speedup_vs_flash_sinkhorn.png", "hvp_time_vs_n.png",
                 "suite_speedup_vs_flash_sinkhorn.png"):
        path = tmp_path / "plots" / name
        assert path.exists() and path.read_bytes()[:4] == b"\x89PNG", name


def test_suite_rows_merge_across_files_newest_run_first(tmp_path):
    report = load_report()
    results = tmp_path / "results"
    write_fixture(results)
    later = [{"impl": "flash-sinkhorn", "status": "ok", "ms": 6.4},  # re-run: replaces 4.8
             {"impl": "geomloss-tensorized", "status": "not_run", "reason": "deadline"},  # keeps OOM
             {"impl": "flashsinkhorn-py", "status": "ok", "ms": 3.2},  # re-run: replaces 1.6
             {"impl": "flashsinkhorn-cli", "status": "ok", "ms": 0.8}]  # its loop alone: no ratio
    write_later_run(results, "suite_2099-01-02_lane1.jsonl", later, command="run.py (later fixture)", n=10000)
    # a file of report_suite.SUPERSEDED: its stale row of ours (0.5 ms, newest) is listed, not used
    stale = {"date": "2099-01-03T00:00:00+00:00", "impl": "flashsinkhorn-cli", "status": "ok", "ms": 0.5}
    write_later_run(results, "suite_h200_2026-11-30_s10a_lane0.jsonl", [stale], command="run.py (later fixture)",
                    n=10000)
    text = report.render(results, tmp_path / "BENCHMARKS.md", tmp_path / "plots")
    forward = text[text.index("### forward (gpu)"):]
    # one table for both files; columns in order: ours first; ratio to the Python package's newest row
    assert "| 64 | 10,000 | tf32 | 0.8 | 3.2 | 6.4 (2.00×) | OOM |" in forward
    assert "Merged from `suite_2099-01-01.jsonl`, `suite_2099-01-02_lane1.jsonl` (" in text
    assert "| `suite_h200_2026-11-30_s10a_lane0.jsonl` | flashsinkhorn-cli | forward | f73d02b: every solve" in text


def test_a_superseded_entry_may_cover_some_sizes_only():
    # suite_h100_2026-12-07_s53b.jsonl: its n = 1,000 HVP rows of ours ran a reverted solve, the rest stand
    load_report()
    from report_suite import superseded_by

    def row(n):
        return {"file": "suite_h100_2026-12-07_s53b.jsonl", "variant": "flashsinkhorn-py", "op": "hvp", "n": n}

    assert "reverted" in superseded_by(row(1000))
    assert superseded_by(row(10000)) is None
    assert superseded_by({**row(1000), "variant": "geomloss-tensorized"}) is None


def test_a_superseded_entry_may_cover_some_precisions_only():
    # suite_h100_2026-12-07_s55b.jsonl: its tf32 HVP rows at 1,000 and 2,000 ran a preconditioner
    # kept for fp64 and fp32 only; its fp32 rows and its tf32 row at 10,000 stand
    load_report()
    from report_suite import superseded_by

    def row(n, precision):
        return {"file": "suite_h100_2026-12-07_s55b.jsonl", "variant": "flashsinkhorn-py", "op": "hvp", "n": n,
                "precision": precision}

    assert "tf32" in superseded_by(row(1000, "tf32"))
    assert superseded_by(row(2000, "tf32")) is not None
    assert superseded_by(row(10000, "tf32")) is None
    assert superseded_by(row(1000, "fp32")) is None


def test_a_suite_run_under_kernel_options_stays_out_of_the_tables(tmp_path):
    # run.py records the FLASHSINKHORN_* choices of its environment (protocol.machine): such a run is
    # an A/B of an option, so its rows must not stand for the defaults in the tables and claims.
    report = load_report()
    results = tmp_path / "results"
    write_fixture(results)
    rows = [{"impl": "flash-sinkhorn", "status": "ok", "ms": 6.4}, {"impl": "flashsinkhorn-py", "status": "ok", "ms": 0.9}]
    write_later_run(results, "suite_2099-01-02_options.jsonl", rows,
                    machine={"gpu": "fixture GPU", "flashsinkhorn_env": {"FLASHSINKHORN_PLAN_CLUSTER_PAIRS": "on"}},
                    command="run.py (option fixture)", n=10000)
    _, sources, skipped = report.load(results)
    assert all(s["file"] != "suite_2099-01-02_options.jsonl" for s in sources)
    assert any(name.startswith("suite_2099-01-02_options.jsonl (run with kernel options") for name in skipped)
    text = report.render(results, tmp_path / "BENCHMARKS.md", tmp_path / "plots")
    assert "0.9 |" not in text[text.index("### forward (gpu)"):]


def test_a_timeout_cell_names_its_phase():
    load_report()  # puts bench/suite on sys.path
    from report_tables import cell

    assert cell({"status": "timeout", "timed_out_in": "the timed calls"}) == "TIMEOUT (timed calls)"
    assert cell({"status": "timeout", "timed_out_in": "the first call (imports, JIT, autotuning included)"}) == \
        "TIMEOUT (first call)"
    assert cell({"status": "timeout"}) == "TIMEOUT"  # rows from before run.py recorded the phase
    assert cell({"status": "oom"}) == "OOM" and cell({"status": "ok", "ms": 2.0}) == "2"


def test_converge_times_compare_only_at_comparable_errors():
    """A peer that stopped far from our marginal error (GeomLoss's fixed schedule) gets no ratio."""
    load_report()
    from report_suite import _comparable_errors

    ours = {"marginal_error": 4e-2, "tol": 1e-4}
    assert _comparable_errors({"marginal_error": 3e-2}, ours)
    assert _comparable_errors({"marginal_error": 0.39}, ours)
    assert not _comparable_errors({"marginal_error": 0.84}, ours)
    assert _comparable_errors({"marginal_error": 9e-4}, {"marginal_error": 5e-5, "tol": 1e-4})  # within 10× tol
    assert _comparable_errors({}, ours)  # no error recorded: nothing to hold against it
    # within 10× of a tf32 floor of 0.17, but an error of 1.4 misplaces most of the mass: no plan
    assert not _comparable_errors({"marginal_error": 1.4}, {"marginal_error": 0.17, "tol": 1e-4})
    assert _comparable_errors({"marginal_error": 0.9}, {"marginal_error": 0.17, "tol": 1e-4})


def test_an_hvp_whose_cg_stopped_above_its_tolerance_gets_no_ratio_and_is_named():
    """Our HVP row carries the CG tolerance it asked for (hvp_method) and the residual it reached: above
    the tolerance its time is that of an unfinished product — no ratio against a peer, and the row is
    named in the table's last column."""
    load_report()
    from report_suite import _op_tables, cg_above_tol

    method = "Solver.hvp: implicit (exact) HVP, CG to 2e-05 relative, preconditioner 'sparse'"
    stalled = {"status": "ok", "hvp_method": method, "cg_relative_residual": 0.2, "cg_iterations": 6}
    assert cg_above_tol(stalled)
    assert not cg_above_tol(dict(stalled, cg_relative_residual=1.9e-5))
    assert not cg_above_tol(dict(stalled, hvp_method=None))  # no tolerance recorded: nothing to hold against it
    assert not cg_above_tol(dict(stalled, status="timeout"))
    key = dict(op="hvp", d=64, n=10_000, precision="tf32", device="gpu", file="suite_2099.jsonl")
    ours = {**key, **stalled, "impl": "flashsinkhorn", "variant": "flashsinkhorn-py", "ms": 21.4}
    peer = dict(key, impl="geomloss", variant="geomloss-tensorized", status="ok", ms=41.8)
    text = "\n".join(_op_tables([ours, peer], "hvp", "gpu H200"))
    assert "41.8 (–: our CG residual 2.0e-01)" in text and "1.95×" not in text
    assert "flashsinkhorn-py: 2.0e-01 after 6 iterations > tol 2e-05" in text
    converged = dict(ours, cg_relative_residual=1.5e-5)
    text = "\n".join(_op_tables([converged, peer], "hvp", "gpu H200"))
    assert "41.8 (1.95×)" in text and "after 6 iterations" not in text


def test_an_hvp_redone_in_float64_says_so_in_its_cell():
    """A suite row whose product fell short in single precision and was redone on float64 passes
    (redone_in_float64) is marked in its cell: its time includes both attempts."""
    load_report()
    from report_suite import _op_tables

    key = dict(op="hvp", d=64, n=10_000, precision="tf32", device="gpu", file="suite_2099.jsonl")
    ours = {**key, "impl": "flashsinkhorn", "variant": "flashsinkhorn-py", "status": "ok", "ms": 166.0,
            "hvp_method": "Solver.hvp: implicit (exact) HVP, CG to 2e-05 relative", "cg_relative_residual": 1.5e-5,
            "redone_in_float64": True}
    peer = dict(key, impl="geomloss", variant="geomloss-tensorized", status="ok", ms=171.0)
    text = "\n".join(_op_tables([ours, peer], "hvp", "gpu H100"))
    assert "| 166 (redone in float64) | 171 (1.03×) |" in text
    text = "\n".join(_op_tables([dict(ours, redone_in_float64=False), peer], "hvp", "gpu H100"))
    assert "| 166 | 171 (1.03×) |" in text


def test_an_hvp_table_says_what_each_column_computes():
    """Under each HVP table, every column's hvp_method as its rows record it (a peer's double backward
    through its last step is another product than our implicit HVP), 'not recorded' where none is."""
    load_report()
    from report_suite import _op_tables

    key = dict(op="hvp", d=64, n=10_000, precision="fp32", device="gpu", file="suite_2099.jsonl")
    ours = {**key, "impl": "flashsinkhorn", "variant": "flashsinkhorn-py", "status": "ok", "ms": 100.0,
            "hvp_method": "Solver.hvp: implicit (exact) HVP, CG to 2e-05 relative"}
    peer = dict(key, impl="geomloss", variant="geomloss-online", status="ok", ms=300.0,
                hvp_method="double backward through GeomLoss's last extrapolation step")
    silent = dict(key, impl="ott", variant="ott-dense", status="ok", ms=500.0)
    text = "\n".join(_op_tables([ours, peer, silent], "hvp", "gpu H100"))
    assert "- flashsinkhorn-py: Solver.hvp: implicit (exact) HVP, CG to 2e-05 relative" in text
    assert "- geomloss-online: double backward through GeomLoss's last extrapolation step" in text
    assert "- ott-dense: not recorded" in text
    assert "What each column computes" not in "\n".join(_op_tables([dict(ours, op="forward")], "forward", "gpu H100"))


def test_rows_at_another_eps_get_an_operation_of_their_own():
    """run.py --eps: a row at ε ≠ 0.1 is labelled with its ε (its own tables), never merged with the
    protocol's rows of the same case."""
    report = load_report()
    from report_suite import base_op

    assert report.op_label({"op": "converge", "eps": 0.1}) == "converge"
    assert report.op_label({"op": "converge"}) == "converge"  # rows from before run.py recorded ε
    assert report.op_label({"op": "converge", "eps": 1.0}) == "converge (ε = 1)"
    assert base_op("converge (ε = 1)") == "converge" and base_op("forward") == "forward"


def test_the_ten_minute_column_is_exact_only_where_no_budget_decided_it():
    """Largest n within 10 minutes: exact when the next n ran out of memory or the grid ran out; a
    lower bound when the next n exceeded a budget under 600 s or was never attempted."""
    load_report()
    from report_reach import ten_minute_verdict, verdict_text

    ok = {"status": "ok", "n": 50_000, "ms": 900.0}
    assert verdict_text(ten_minute_verdict((50_000, "oom", {"status": "oom", "n": 200_000}, ok), 1_000_000)) == \
        "50,000 (n = 200,000: oom)"
    assert verdict_text(ten_minute_verdict((1_000_000, "", None, dict(ok, n=1_000_000)), 1_000_000)) == \
        "1,000,000 (the grid's largest)"
    assert verdict_text(ten_minute_verdict((50_000, "", None, ok), 1_000_000)) == "≥ 50,000 (larger n not attempted)"
    timeout = {"status": "timeout", "n": 200_000, "budget": 150}
    assert verdict_text(ten_minute_verdict((50_000, "timeout", timeout, ok), 1_000_000)) == \
        "≥ 50,000 (n = 200,000 exceeded a 150 s budget)"
    assert verdict_text(ten_minute_verdict((50_000, "timeout", dict(timeout, budget=600), ok), 1_000_000)) == \
        "50,000 (n = 200,000: over 600 s)"
    assert verdict_text(ten_minute_verdict((0, "timeout", dict(timeout, n=1000), None), 1_000_000)).startswith("undecided")
    assert verdict_text(ten_minute_verdict((50_000, "", None, dict(ok, ms=700_000.0)), 1_000_000)).startswith("< 50,000")
    # a failure two sizes up decides nothing about the size between, which the group never ran
    assert verdict_text(ten_minute_verdict((5_000, "oom", {"status": "oom", "n": 50_000}, dict(ok, n=5_000)), 1_000_000,
                               untried=10_000)) == "≥ 5,000 (n = 10,000 not attempted; n = 50,000: oom)"


def test_a_gpu_reach_call_over_the_command_limit_decides_for_that_limit_only():
    """On the GPU machine no case can run 600 s: a reach run's one call over 540 s decides the column,
    marked '‡' (exact for 540 s); the same timeout without a reach run, or on the CPU, stays a bound."""
    load_report()
    from report_reach import ten_minute_verdict

    ok = {"status": "ok", "n": 50_000, "ms": 200_000.0}
    over = {"status": "timeout", "n": 200_000, "budget": 540, "reach": True, "device": "gpu"}
    assert ten_minute_verdict((50_000, "timeout", over, ok), 1_000_000) == \
        ("50,000‡", "n = 200,000: one call over 540 s, the most a device command holds")
    assert ten_minute_verdict((50_000, "timeout", dict(over, reach=False), ok), 1_000_000)[0] == "≥ 50,000"
    assert ten_minute_verdict((50_000, "timeout", dict(over, device="cpu"), ok), 1_000_000)[0] == "≥ 50,000"
    assert ten_minute_verdict((50_000, "timeout", dict(over, budget=300), ok), 1_000_000)[0] == "≥ 50,000"


def test_the_claims_take_the_most_decided_card_for_each_implementation():
    """The claims' 10-minute table: per implementation, operation, device and d, an exact answer on one
    card beats a larger lower bound on another; our CLI and C++ rows stay out (ours is the package)."""
    load_report()
    from report_reach import ten_minute_claim

    def row(variant, card, n, status, **extra):
        return {"variant": variant, "op": "forward", "d": 64, "device": "gpu", "card": card, "precision": "tf32",
                "n": n, "status": status, "ms": 1_000.0, **extra}

    rows = [row("ott-dense", "H100", 50_000, "ok"), row("ott-dense", "H100", 200_000, "oom"),
            row("ott-dense", "H200", 200_000, "ok"),  # a lower bound only: 1,000,000 never ran there
            row("ott-dense", "H200", 1_000, "ok"),
            row("flashsinkhorn-py", "H200", 1_000_000, "ok"), row("flashsinkhorn-cli", "H200", 1_000_000, "ok"),
            row("C++ wgmma-ws", "H200", 200_000, "ok")]
    text = "\n".join(ten_minute_claim(rows))
    assert "| ott-dense | forward | – | 50,000 (next n: oom; H100, tf32) | – | – |" in text
    assert "| flashsinkhorn-py | forward | – | 1,000,000 (H200, tf32) | – | – |" in text
    assert "flashsinkhorn-cli" not in text and "C++" not in text


def test_an_operation_a_peer_lacks_reads_unsupported_not_not_run():
    """A group whose rows say the peer has no such operation (POT's lazy solver has no gradient) is
    'unsupported' in the claims' table, also beside 'not run' rows of the same group and over a card
    where it never ran."""
    load_report()
    from report_reach import ten_minute_claim

    def row(card, n, status, **extra):
        return {"variant": "pot-lazy", "op": "forward_gradient", "d": 64, "device": "gpu", "card": card,
                "precision": "tf32", "n": n, "status": status, **extra}

    rows = [row("H200", 1_000, "not_run"), row("H200", 1_000, "unsupported", reason="no autograd path"),
            row("H100", 1_000, "not_run")]
    text = "\n".join(ten_minute_claim(rows))
    assert "| pot-lazy | forward_gradient | – | unsupported (H200, tf32) | – | – |" in text


def test_a_forward_over_the_device_limit_decides_forward_and_gradient_at_that_n():
    """Forward + gradient runs the forward first: where the forward's one reach call at the next size
    ran over 540 s on the same card and precision, the forward + gradient lower bound becomes exact
    for that limit; not from another card, nor over a size in between that never ran."""
    load_report()
    from report_reach import verdicts

    def row(op, card, n, status, **extra):
        return {"variant": "flash-sinkhorn", "op": op, "d": 64, "device": "gpu", "card": card, "precision": "tf32",
                "n": n, "status": status, "ms": 1_000.0, **extra}

    over = dict(reach=True, budget=565)
    rows = [row("forward", "H100", 200_000, "ok"), row("forward", "H100", 1_000_000, "timeout", **over),
            row("forward_gradient", "H100", 200_000, "ok"),
            row("forward_gradient", "H100", 1_000_000, "timeout", reach=True, budget=110),
            row("forward_gradient", "H200", 200_000, "ok"), row("forward", "H200", 1_000_000, "ok")]
    found = verdicts(rows)
    value, reason = found[("flash-sinkhorn", "forward_gradient", 64, "gpu H100", "tf32")][1]
    assert (value, "its forward alone" in reason) == ("200,000‡", True)
    assert found[("flash-sinkhorn", "forward_gradient", 64, "gpu H200", "tf32")][1][0] == "≥ 200,000"
    gap = [r for r in rows if not (r["op"] == "forward_gradient" and r["n"] == 200_000)] + [
        row("forward_gradient", "H100", 50_000, "ok")]
    assert verdicts(gap)[("flash-sinkhorn", "forward_gradient", 64, "gpu H100", "tf32")][1][0] == "≥ 50,000"


def test_the_sizes_a_group_skipped_below_its_failure_are_found():
    load_report()
    from report_reach import reach_of, untried_below_failure

    rows = [{"n": 1_000, "status": "ok"}, {"n": 5_000, "status": "ok"}, {"n": 50_000, "status": "oom"}]
    grid = {1_000, 5_000, 10_000, 50_000, 200_000}
    assert untried_below_failure(reach_of(rows), rows, grid) == 10_000
    assert untried_below_failure(reach_of(rows), rows, grid - {10_000}) is None
    assert untried_below_failure(reach_of(rows[:2]), rows[:2], grid) is None  # no failure: nothing to decide


def test_reach_rows_decide_the_ten_minute_column_and_nothing_else():
    """A reach run's rows (one call each, 600 s budget) extend a group past an earlier run's timeout at
    a shorter budget; the first failure is then the one above the largest n that ran, and of the rows
    failing at that n the one with the longest budget."""
    load_report()
    from report_reach import reach_of, ten_minute_verdict, verdict_text

    row = {"variant": "flash-sinkhorn", "op": "forward", "d": 64, "precision": "tf32", "device": "gpu"}
    timing = [dict(row, n=50_000, status="ok", ms=300.0),
              dict(row, n=200_000, status="timeout", budget=60, error="not done within the 60 s budget")]
    reach = [dict(row, n=200_000, status="ok", ms=5_000.0, reach=True),
             dict(row, n=1_000_000, status="timeout", budget=600, reach=True)]
    n_ok, failure, failed, ok = reach_of(timing + reach)
    assert (n_ok, failed["budget"], ok["n"]) == (200_000, 600, 200_000)
    assert failure == "timeout at n = 1,000,000"
    assert verdict_text(ten_minute_verdict((n_ok, failure, failed, ok), 1_000_000)) == "200,000 (n = 1,000,000: over 600 s)"
    # the same n failing twice: the 600 s budget decides, not the shorter one
    twice = timing + [dict(row, n=200_000, status="timeout", budget=600, reach=True)]
    assert reach_of(twice)[2]["budget"] == 600
    # an out-of-memory failure at that n beats any timeout
    oom = twice + [dict(row, n=200_000, status="oom")]
    assert reach_of(oom)[2]["status"] == "oom"


def test_a_later_timeout_under_a_shorter_budget_leaves_the_success_in_place():
    """Merging keeps the newest run of a case, except a timeout under a shorter budget than the one an
    earlier run succeeded in (no contradiction: the success needed more time than the later run had);
    under an equal or longer budget the timeout is news and replaces it."""
    load_report()
    from report_reach import reach_of
    from report_suite import merge

    case = {"file": "suite_2099.jsonl", "variant": "flash-sinkhorn", "op": "forward", "d": 3, "n": 1_000_000,
            "precision": "tf32", "device": "gpu", "machine": {"gpu": "NVIDIA H100"}, "reach": True}
    smaller = dict(case, n=200_000, status="ok", ms=30_000.0, budget=540.0, date="2099-01-01")
    success = dict(case, status="ok", ms=324_000.0, budget=540.0, date="2099-01-01")
    short = dict(case, status="timeout", budget=110.0, date="2099-01-02")
    merged, _ = merge([smaller, success, short])
    assert [r["status"] for r in merged if r["n"] == 1_000_000] == ["ok"]
    assert reach_of(merged)[0] == 1_000_000
    longer = dict(short, budget=600.0)
    merged, _ = merge([smaller, success, longer])
    assert [r["status"] for r in merged if r["n"] == 1_000_000] == ["timeout"]
    assert reach_of(merged)[0] == 200_000


def test_reach_rows_stay_out_of_the_timing_tables(tmp_path):
    report = load_report()
    results = tmp_path / "results"
    write_fixture(results)
    rows = [{"impl": "flash-sinkhorn", "n": 200000, "status": "ok", "ms": 2000.0},
            {"impl": "flash-sinkhorn", "n": 1000000, "status": "ok", "ms": 30000.0}]
    write_later_run(results, "suite_2099-01-02_reach.jsonl", rows, command="run.py --reach", reach=True)
    text = report.render(results, tmp_path / "BENCHMARKS.md", tmp_path / "plots")
    tables = text[text.index("### forward (gpu"):text.index("### Largest n reached")]
    assert "| 64 | 10,000 | tf32 |" in tables and "200,000" not in tables and "1,000,000" not in tables
    reach = text[text.index("### Largest n reached"):]
    assert "| flash-sinkhorn | forward | 64 |" in reach and "1,000,000 (the grid's largest)" in reach
    # nor in the claims: a reach file holding both sides pairs no first calls
    write_later_run(results, "suite_2099-01-03_reach.jsonl", [{"impl": "flash-sinkhorn", "ms": 900.0},
                                                               {"impl": "flashsinkhorn-py", "ms": 100.0}],
                    date="2099-01-03T00:00:00+00:00", command="run.py --reach", reach=True, n=10000, status="ok")
    assert report.same_run_speedups(report.load(results)[0], "forward")[(10000, 64, "tf32")]["ratio"] == pytest.approx(3.0)
    glance = reach[reach.index("At a glance"):]
    line = next(row for row in glance.splitlines() if row.startswith("| flash-sinkhorn | forward |"))
    assert line.endswith("| 1,000,000 |"), line  # d = 64, the fixture's only d


def test_each_card_gets_its_own_cells_and_ratios(tmp_path):
    """The device lends an H100 or an H200: the same case measured on both stays two cells, each card has
    tables of its own, and a ratio pairs only rows of one card (the H200's where both have a pair)."""
    report = load_report()
    from report_suite import merge, speedups

    results = tmp_path / "results"
    results.mkdir()
    header = {"suite": "flashsinkhorn-bench-suite", "schema": 1, "commit": "abc1234", "command": "run.py (fixture)",
              "device": "cuda", "precision": "fp32", "d": 3, "op": "forward"}
    h200 = {**header, "machine": {"gpu": "NVIDIA H200"}, "date": "2099-01-01T00:00:00+00:00"}
    h100 = {**header, "machine": {"gpu": "NVIDIA H100 80GB HBM3"}, "date": "2099-01-02T00:00:00+00:00"}
    rows = [{**h200, "impl": "flashsinkhorn-py", "n": 10000, "status": "ok", "ms": 2.0},
            {**h200, "impl": "flash-sinkhorn", "n": 10000, "status": "ok", "ms": 4.0},   # H200: 2×
            {**h100, "impl": "flashsinkhorn-py", "n": 10000, "status": "ok", "ms": 1.0},
            {**h100, "impl": "flash-sinkhorn", "n": 10000, "status": "ok", "ms": 5.0},   # H100: 5×, newer
            {**h100, "impl": "flash-sinkhorn", "n": 50000, "status": "ok", "ms": 90.0},  # H100 only: 3×
            {**h100, "impl": "flashsinkhorn-py", "n": 50000, "status": "ok", "ms": 30.0},
            {**h200, "impl": "flashsinkhorn-py", "n": 200000, "status": "ok", "ms": 300.0}]  # no peer on the H200
    rows.append({**h100, "impl": "flash-sinkhorn", "n": 200000, "status": "ok", "ms": 900.0})  # nor ours on the H100
    (results / "suite_2099-01-01.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    text = report.render(results, tmp_path / "BENCHMARKS.md", tmp_path / "plots")
    assert "### forward (gpu H200)" in text and "### forward (gpu H100)" in text
    assert text.index("### forward (gpu H200)") < text.index("### forward (gpu H100)")
    merged, _ = merge([report.suite_row(r, "suite_2099-01-01.jsonl") for r in rows])
    assert len(merged) == len(rows)  # the newer H100 rows replace none of the H200's
    ratios = speedups(merged, "forward")
    assert ratios[(10000, 3, "fp32")] == pytest.approx(2.0)  # the H200's pair, though the H100's is newer
    assert ratios[(50000, 3, "fp32")] == pytest.approx(3.0)
    assert (200000, 3, "fp32") not in ratios  # 900 ms on the H100 against 300 ms on the H200: no ratio


def narrow_reference_section_of(tmp_path, rows) -> tuple[str, str]:
    """BENCHMARKS.md (whole, and its row-references section) rendered from one narrow_reference_ab file
    of `rows`."""
    report = load_report()
    results = tmp_path / "results"
    results.mkdir()
    data = {"benchmark": "narrow_reference_ab", "commit": "abc1234", "date": "2099-01-01", "machine": "vm", "rows": rows}
    (results / "narrow_reference_ab_2099-01-01.json").write_text(json.dumps(data))
    text = report.render(results, tmp_path / "BENCHMARKS.md", tmp_path / "plots")
    return text, text[text.index("## The softmin's row references"):]


def test_the_narrow_reference_files_get_a_table_with_auto_judged(tmp_path):
    """bench/narrow_reference_ab.sh's files: a table per file, a column per choice with its kernel, and
    whether `auto` ran the fastest choice (within 2%); listed under Sources, not as unconverted."""
    row = {"impl": "flashsinkhorn", "device": "fixture GPU", "m": 50000, "d": 3, "n": 50000, "precision": "tf32",
           "iterations": 10}
    rows = [{**row, "narrow_reference": "online", "kernel": "wgmma-ws", "ms_per_iteration": 2.48},
            {**row, "narrow_reference": "auto", "kernel": "fma", "ms_per_iteration": 2.12},
            {**row, "d": 4, "narrow_reference": "online", "kernel": "wgmma-ws", "ms_per_iteration": 2.48},
            {**row, "d": 4, "narrow_reference": "auto", "kernel": "fma", "ms_per_iteration": 2.82},
            {**row, "d": 8, "narrow_reference": "online", "kernel": "wgmma-ws", "ms_per_iteration": 2.46},
            {**row, "d": 8, "narrow_reference": "auto", "kernel": "wgmma-ws", "ms_per_iteration": 2.50}]
    text, section = narrow_reference_section_of(tmp_path, rows)
    assert "| precision | d | n | online | auto | auto ran |" in section  # only the choices measured
    assert "| tf32 | 3 | 50,000 | 2.48 (wgmma-ws) | 2.12 (fma) | fastest |" in section
    assert "| tf32 | 4 | 50,000 | 2.48 (wgmma-ws) | 2.82 (fma) | 1.14× the fastest |" in section
    assert "| tf32 | 8 | 50,000 | 2.46 (wgmma-ws) | 2.5 (wgmma-ws) | fastest |" in section  # 1.6%: within 2%
    assert "| `narrow_reference_ab_2099-01-01.json` | narrow_reference_ab | 6 | `abc1234` |" in text
    assert "Not converted" not in text or "narrow_reference_ab_2099" not in text.split("Not converted")[1]


def test_narrow_reference_rows_with_a_margin_get_their_own_column(tmp_path):
    """Rows run under FLASHSINKHORN_NARROW_MARGIN (narrow_margin ≠ 0) are a choice of their own, after
    the plain ones, and `auto` is judged against them too."""
    row = {"impl": "flashsinkhorn", "device": "fixture GPU", "m": 50000, "d": 8, "n": 50000, "precision": "fp32",
           "iterations": 10, "kernel": "fma"}
    rows = [{**row, "narrow_reference": "online", "narrow_margin": 0, "ms_per_iteration": 3.35},
            {**row, "narrow_reference": "auto", "narrow_margin": 0, "ms_per_iteration": 3.35},
            {**row, "narrow_reference": "predicted", "narrow_margin": 0, "ms_per_iteration": 5.07},
            {**row, "narrow_reference": "predicted", "narrow_margin": 64, "ms_per_iteration": 2.9}]
    _, section = narrow_reference_section_of(tmp_path, rows)
    assert "| precision | d | n | online | predicted | auto | predicted M=64 | auto ran |" in section
    assert "| fp32 | 8 | 50,000 | 3.35 (fma) | 5.07 (fma) | 3.35 (fma) | 2.9 (fma) | 1.16× the fastest |" in section


def test_narrow_reference_rows_with_split_exponentials_get_their_own_column(tmp_path):
    """Rows run under FLASHSINKHORN_EXP2=split (exp2 "split") or with a kernel forced (forced_kernel) are
    choices of their own; rows without the fields (files from before them), with "mufu" or with no
    kernel forced keep their plain label."""
    row = {"impl": "flashsinkhorn", "device": "fixture GPU", "m": 50000, "d": 8, "n": 50000, "precision": "tf32",
           "iterations": 10, "kernel": "wgmma-ws"}
    rows = [{**row, "narrow_reference": "online", "ms_per_iteration": 2.41},
            {**row, "narrow_reference": "auto", "exp2": "mufu", "forced_kernel": "", "ms_per_iteration": 1.70},
            {**row, "narrow_reference": "auto", "exp2": "split", "ms_per_iteration": 1.50},
            {**row, "precision": "bf16", "kernel": "wgmma-tma", "narrow_reference": "auto", "forced_kernel": "",
             "ms_per_iteration": 2.30},
            {**row, "precision": "bf16", "narrow_reference": "auto", "forced_kernel": "ws", "ms_per_iteration": 1.60}]
    _, section = narrow_reference_section_of(tmp_path, rows)
    assert "| precision | d | n | online | auto | auto exp2=split | auto kernel=ws | auto ran |" in section
    assert "| tf32 | 8 | 50,000 | 2.41 (wgmma-ws) | 1.7 (wgmma-ws) | 1.5 (wgmma-ws) | – | 1.13× the fastest |" in section
    assert "| bf16 | 8 | 50,000 | – | 2.3 (wgmma-tma) | – | 1.6 (wgmma-ws) | 1.44× the fastest |" in section


def test_the_plan_table_keeps_each_size_from_its_newest_file(tmp_path):
    """A plan-pass run that measured a few sizes replaces those rows only: the sizes an earlier file
    measured stay, each row naming its file, and cards stay apart."""
    report = load_report()
    results = tmp_path / "results"
    results.mkdir()

    def plan_file(name, date, rows):
        data = {"benchmark": "plan_pass_and_gradient", "commit": "abc1234", "date": date, "machine": "vm",
                "rows": [{"impl": "flashsinkhorn", "bench": "plan_pass", "m": r["n"], "k": r["d"], **r} for r in rows]}
        (results / name).write_text(json.dumps(data))

    h100, h200 = "NVIDIA H100 80GB HBM3", "NVIDIA H200"
    plan_file("plan_pass_old.json", "2099-01-01T00:00:00", [
        {"device": h100, "n": 50000, "d": 64, "precision": "tf32", "half_step_ms": 1.7, "plan_ms": 8.0},
        {"device": h100, "n": 50000, "d": 3, "precision": "tf32", "half_step_ms": 9.9, "plan_ms": 9.9},
        {"device": h200, "n": 50000, "d": 3, "precision": "tf32", "half_step_ms": 1.5, "plan_ms": 2.5}])
    plan_file("plan_pass_new.json", "2099-02-01T00:00:00", [
        {"device": h100, "n": 50000, "d": 3, "precision": "tf32", "half_step_ms": 1.08, "plan_ms": 2.53}])
    text = report.render(results, tmp_path / "BENCHMARKS.md", tmp_path / "plots")
    section = text[text.index("## Plan pass and gradient"):text.index("## Hessian")]
    assert "| 50,000 | 3 | tf32 | H100 | – | 1.08 | 2.53 | – | – | `plan_pass_new.json` |" in section
    assert "| 50,000 | 3 | tf32 | H200 | – | 1.5 | 2.5 | – | – | `plan_pass_old.json` |" in section
    assert "| 50,000 | 64 | tf32 | H100 | – | 1.7 | 8 | – | – | `plan_pass_old.json` |" in section
    assert "9.9" not in section  # the older H100 row at d = 3 is replaced


def test_the_plan_table_prefers_the_default_pairing_of_each_precision(tmp_path):
    """A file with the plan pass's pairings forced one after another (gpu_check's L2_PLAN_PAIRS) shows,
    per size and precision, the row of the default pairing (tf32: split, bf16: multicast), whatever
    the order; older files' booleans read as multicast / off."""
    report = load_report()
    results = tmp_path / "results"
    results.mkdir()
    h100 = "NVIDIA H100 80GB HBM3"

    def row(precision, pairs, gradient_ms):
        return {"impl": "flashsinkhorn", "bench": "plan_pass", "device": h100, "n": 10000, "m": 10000, "d": 512,
                "k": 512, "precision": precision, "half_step_ms": 0.4, "plan_ms": 26.0, "gradient_ms": gradient_ms,
                "plan_cluster_pairs": pairs}

    old = {"benchmark": "plan_pass", "commit": "abc1234", "date": "2099-01-01T00:00:00", "machine": "vm",
           "rows": [row("tf32", True, 1.11), row("bf16", False, 1.22)]}
    new = {"benchmark": "plan_pass", "commit": "abc1235", "date": "2099-02-01T00:00:00", "machine": "vm",
           "rows": [row("tf32", "split", 1.33), row("bf16", "multicast", 1.44), row("tf32", "multicast", 1.55),
                    row("bf16", "split", 1.66)]}
    (results / "plan_pass_old.json").write_text(json.dumps(old))
    (results / "plan_pass_new.json").write_text(json.dumps(new))
    text = report.render(results, tmp_path / "BENCHMARKS.md", tmp_path / "plots")
    section = text[text.index("## Plan pass and gradient"):text.index("## Hessian")]
    assert "| 10,000 | 512 | tf32 | H100 | split | 0.4 | 26 | 1.33 | – | `plan_pass_new.json` |" in section
    assert "| 10,000 | 512 | bf16 | H100 | multicast | 0.4 | 26 | 1.44 | – | `plan_pass_new.json` |" in section
    for forced_or_older in ("1.11", "1.22", "1.55", "1.66"):
        assert forced_or_older not in section
    assert report.plan_pairing_of(True) == "multicast" and report.plan_pairing_of(False) == "off"


def test_a_same_run_ratio_with_few_timed_calls_is_shown_but_not_judged(tmp_path):
    """Before session 35 the suite sized its repeats by the first call, and a peer whose first call
    autotunes left one or two timed samples: such a pair keeps its ratio but gets no verdict."""
    report = load_report()
    results = tmp_path / "results"
    results.mkdir()
    header = {"suite": "flashsinkhorn-bench-suite", "schema": 1, "commit": "abc1234", "command": "run.py (fixture)",
              "device": "cuda", "precision": "tf32", "d": 8, "op": "forward", "machine": {"gpu": "NVIDIA H100"},
              "date": "2099-01-01T00:00:00+00:00", "status": "ok"}
    rows = [{**header, "impl": "flashsinkhorn-py", "n": 10000, "ms": 1.0, "ms_all": [1.0, 1.1, 0.9, 1.0, 1.0]},
            {**header, "impl": "flash-sinkhorn", "n": 10000, "ms": 5.0, "ms_all": [5.0]},
            {**header, "impl": "flashsinkhorn-py", "n": 50000, "ms": 10.0, "ms_all": [10.0] * 5},
            {**header, "impl": "flash-sinkhorn", "n": 50000, "ms": 30.0, "ms_all": [30.0, 30.1, 29.9]}]
    (results / "suite_2099-01-01.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    text = report.render(results, tmp_path / "BENCHMARKS.md", tmp_path / "plots")
    assert "| 10,000 | 8 | tf32 | 5.00× | – | not judged (flash-sinkhorn 1 timed call) |" in text
    assert "| 50,000 | 8 | tf32 | 3.00× | – | met |" in text


def test_the_hvp_claim_takes_our_forward_from_the_same_card(tmp_path):
    """report_hvp.forward_ms_per_iteration: a newer file from another GPU model is left out, a file that
    names no model serves only where none of the wanted model has the row."""
    load_report()  # puts bench/suite on sys.path for report_hvp
    import report_hvp

    def forward_file(name: str, machine: str, ms: float, n: int = 10000) -> None:
        rows = [{"impl": "flashsinkhorn", "n": n, "d": 64, "precision": "fp32", "ms_per_iteration": ms}]
        (tmp_path / name).write_text(json.dumps({"machine": machine, "rows": rows}))

    forward_file("gpu_forward_2026-11-30_a.json", "vm", 0.7)
    forward_file("gpu_forward_2026-11-30_b.json", "vm", 0.9, n=20000)
    forward_file("gpu_forward_2026-12-01.json", "NVIDIA H200", 0.6)
    forward_file("gpu_forward_h100_2026-12-05.json", "NVIDIA H100 80GB HBM3", 0.5)
    h200 = report_hvp.forward_ms_per_iteration(tmp_path, "NVIDIA H200 (device machine)")
    assert h200[(10000, 64, "fp32")] == (0.6, "gpu_forward_2026-12-01.json")
    assert h200[(20000, 64, "fp32")] == (0.9, "gpu_forward_2026-11-30_b.json")
    h100 = report_hvp.forward_ms_per_iteration(tmp_path, "NVIDIA H100 80GB HBM3")
    assert h100[(10000, 64, "fp32")] == (0.5, "gpu_forward_h100_2026-12-05.json")
    assert report_hvp.card_of("vm") is None


def test_forward_claims_fall_back_to_the_session_that_timed_the_peer(tmp_path):
    # A newer gpu_forward session re-timed ours at both sizes, but its peer run was cut short before
    # n = 50,000: the claim at 10,000 comes from the newer session, the one at 50,000 from the older.
    report = load_report()
    results, markdown, plots = tmp_path / "results", tmp_path / "BENCHMARKS.md", tmp_path / "plots"
    write_fixture(results)
    ours = {"impl": "flashsinkhorn", "kernel": "wgmma-ws", "m": 10000, "d": 64, "precision": "tf32", "iterations": 10,
            "finite": True}
    rows = [{**ours, "n": 10000, "ms_per_iteration": 0.1, "roofline_floor_ms": 0.05}, {**ours, "n": 50000, "ms_per_iteration": 2.0},
            {"impl": "flash-sinkhorn", "n": 10000, "m": 10000, "d": 64, "precision": "tf32", "iterations": 10,
             "ms_per_iteration": 0.45}]
    (results / "gpu_forward_2099-02-01.json").write_text(json.dumps(
        {"benchmark": "gpu_forward", "commit": "def5678", "date": "2099-02-01T00:00:00+00:00", "machine": "fixture",
         "rows": rows}))
    text = report.render(results, markdown, plots)
    # floor allows: the peer's ms over our floor (0.45 / 0.05; the older file's 4.5 / 1.62).
    assert "| 10,000 | 64 | tf32 | wgmma-ws | 4.50× | 9.00× | met | `gpu_forward_2099-02-01.json` |" in text
    assert "| 50,000 | 64 | tf32 | wgmma-tma | 1.50× | 2.78× | short by 1.33× | `gpu_forward_2099-01-01.json` |" in text


def test_the_memory_claim_puts_each_line_of_ours_on_one_row_with_a_column_per_n():
    """One line per (operation, d, entry point, card, precision, source), the sizes as columns, the
    ratio to the clouds' bytes at the line's largest n; two cards never share a line."""
    load_report()
    from report_memory import memory_claim

    def row(n, peak, card="H200", impl="flashsinkhorn", variant="flashsinkhorn-py", status="ok"):
        return {"impl": impl, "variant": variant, "op": "forward", "d": 64, "device": "gpu", "card": card,
                "precision": "tf32", "n": n, "status": status, "peak_bytes": peak, "peak_source": "allocator"}

    text = "\n".join(memory_claim([row(10_000, 2 ** 20 * 8), row(1_000_000, 2 ** 20 * 800), row(10_000, 2 ** 20 * 9, "H100"),
                                   row(50_000, None, impl="ott", variant="ott-dense", status="oom")]))
    assert "| forward | 64 | flashsinkhorn-py | H200 | tf32 | 8 MB | 800 MB | 1.6 (n = 1,000,000) | allocator |" in text
    assert "| forward | 64 | flashsinkhorn-py | H100 | tf32 | 9 MB | – | 1.8 (n = 10,000) | allocator |" in text
    assert "Dense peers out of memory: ott-dense at n = 50,000 (d = 64)" in text


def test_byte_counts_read_as_numbers_between_units():
    """1,000–1,023 MiB is not yet a GiB: the cell reads "1,020 MB", not "1.02e+03 MB"."""
    load_report()
    from report_tables import fmt_bytes

    assert fmt_bytes(1020 * 2 ** 20) == "1,020 MB"
    assert fmt_bytes(513 * 2 ** 20) == "513 MB"
    assert fmt_bytes(1.93 * 2 ** 30) == "1.93 GB"
    assert fmt_bytes(None) == "–"
