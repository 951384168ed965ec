"""flashsinkhorn (ours) in the suite: `flashsinkhorn-cli` (the `flashsinkhorn solve` command on the
suite's .npy files) and `flashsinkhorn-py` (the Python package, NumPy in). The kernel-only timings of
the fixed-iteration forward and of forward + gradient come from the C++ benchmarks
(bench/gpu_forward_bench.cu, bench/plan_pass_bench.cu; run_device.sh runs them on the same sizes);
these drivers add the same-input runs, the converge operation and the marginal error.

flashsinkhorn-cli  forward: --iters N --tol 0; converge: --scaling S --tol T --iters max_iters; the
                   time is the JSON's solve_seconds (the loop; `ms_process` is the whole process,
                   reading the files and CUDA start-up included). One process per timed call.
                   Device memory: the parent's nvidia-smi sampling (the CLI reports none).
flashsinkhorn-py   sinkhorn(x, y, a, b, …) on NumPy arrays, device 'cuda' or 'cpu'; forward_gradient:
                   Solver(…).solve() then gradient_x(); wall clock of these synchronous calls (host ↔
                   device copies included: the package copies to and from the device per call).
                   hvp: only if the package has one (`flashsinkhorn.hvp`), else 'unsupported'.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

from protocol import Case, Unsupported, ensure_data, host_memory, hvp_direction, load_data, median, time_wall

REPO = Path(__file__).resolve().parents[2]


def cli_binary() -> str:
    for candidate in (os.environ.get("FLASHSINKHORN_BIN"), REPO / "build-gpu/apps/cli/flashsinkhorn",
                      REPO / "build/apps/cli/flashsinkhorn", REPO / "build-bench/apps/cli/flashsinkhorn"):
        if candidate and Path(candidate).exists():
            return str(candidate)
    raise Unsupported("no flashsinkhorn CLI binary (set FLASHSINKHORN_BIN)")


def run_cli(case: Case) -> dict:
    if case.op not in ("forward", "converge"):
        raise Unsupported("the CLI reports no gradient or HVP time (forward + gradient: the C++ plan bench "
                          "and flashsinkhorn-py)")
    binary = cli_binary()
    paths = ensure_data(case.data_dir, case.n, case.d, "float64" if case.precision == "fp64" else "float32")
    device = "cuda" if case.device.startswith("cuda") else "cpu"
    with tempfile.TemporaryDirectory() as out_dir:
        cmd = [binary, "solve", "--x", paths["x"], "--y", paths["y"], "--a", paths["a"], "--b", paths["b"],
               "--eps", str(case.eps), "--precision", case.precision, "--device", device, "--quiet",
               "--out", out_dir]
        if case.op == "forward":
            cmd += ["--iters", str(case.iters), "--tol", "0"]
        else:
            cmd += ["--iters", str(case.max_iters), "--tol", str(case.tol), "--scaling", str(case.scaling)]
        if case.threads:
            cmd += ["--threads", str(case.threads)]
        env = dict(os.environ, OMP_NUM_THREADS=str(case.threads)) if case.threads else None
        runs, walls = [], []
        for index in range(case.warmup + case.repeats):
            t0 = time.perf_counter()
            child = subprocess.Popen([str(c) for c in cmd], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
            out, err = child.communicate()
            wall = time.perf_counter() - t0
            if child.returncode != 0:
                raise RuntimeError(f"flashsinkhorn solve exited {child.returncode}: {err.decode()[-1500:]}")
            summary = json.loads(out)
            if index >= case.warmup:
                runs.append(summary)
                walls.append(wall)
            if index == 0 and case.warmup and summary["solve_seconds"] * (case.repeats + 1) > 120:
                case.repeats = 1
        solve_ms = [1e3 * r["solve_seconds"] for r in runs]
        record = {"ms": median(solve_ms), "ms_min": min(solve_ms), "ms_all": solve_ms,
                  "ms_process": 1e3 * median(walls), "repeats": len(runs),
                  "timer": "solve_seconds of the CLI's JSON (the loop, prepare excluded)",
                  "prepare_ms": 1e3 * median([r["prepare_seconds"] for r in runs]),
                  "iterations": runs[-1]["iterations"], "own_marginal_error": runs[-1]["marginal_error"],
                  "converged": runs[-1]["converged"], "value_reported": runs[-1]["cost"],
                  "version": runs[-1].get("version"), "cli_device": runs[-1].get("device"),
                  "peer_config": " ".join(str(c) for c in cmd[2:] if not str(c).startswith("/")),
                  "peak_device_bytes_source": "nvidia-smi sampling by the parent (peak_device_bytes_smi)"}
        if device == "cpu":
            import resource

            record["peak_host_rss_bytes"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
            record["peak_host_rss_source"] = "ru_maxrss of the CLI processes"
        if case.op == "forward":
            record["ms_per_iteration"] = record["ms"] / case.iters
        else:
            record["own_criterion"] = "L1 marginal error (SPEC §1) every 10 iterations"
        f, g = np.load(Path(out_dir) / "f.npy"), np.load(Path(out_dir) / "g.npy")
    return record, (load_data(case, "float64" if case.precision == "fp64" else "float32"), f, g)


def run_py(case: Case) -> dict:
    import flashsinkhorn as fs

    host = load_data(case, "float64" if case.precision == "fp64" else "float32")
    x, y, a, b = host
    device = "cuda" if case.device.startswith("cuda") else "cpu"
    common = dict(eps=case.eps, precision=case.precision, device=device, threads=case.threads)
    record = {"version": fs.__version__}
    if case.op == "forward":
        timing, res = time_wall(lambda: fs.sinkhorn(x, y, a, b, iters=case.iters, tol=0, **common), case)
        record.update(timing, ms_per_iteration=timing["ms"] / case.iters, value_reported=float(res.cost),
                      own_marginal_error=res.marginal_error, library_seconds=res.seconds)
        record.update(host_memory() if device == "cpu" else {})
        return record, (host, np.asarray(res.f, np.float64), np.asarray(res.g, np.float64))
    if case.op == "converge":
        timing, res = time_wall(lambda: fs.sinkhorn(x, y, a, b, iters=case.max_iters, tol=case.tol,
                                                    scaling=case.scaling, **common), case)
        record.update(timing, iterations=res.iterations, converged=res.converged, own_marginal_error=res.marginal_error,
                      own_criterion="L1 marginal error (SPEC §1) every 10 iterations", library_seconds=res.seconds)
        record.update(host_memory() if device == "cpu" else {})
        return record, (host, np.asarray(res.f, np.float64), np.asarray(res.g, np.float64))
    if case.op == "forward_gradient":
        def call():
            solver = fs.Solver(x, y, a, b, iters=case.iters, tol=0, **common)
            solver.solve()
            return solver.gradient_x()
        timing, grad = time_wall(call, case)
        record.update(timing, gradient_norm=float(np.linalg.norm(grad)))
        return record, None
    if case.op == "hvp":
        hvp = getattr(fs, "hvp", None)
        if hvp is None:
            raise Unsupported(f"flashsinkhorn {fs.__version__} has no HVP at this commit")
        direction = hvp_direction(case.n, case.d)
        timing, hv = time_wall(lambda: hvp(x, y, direction, a, b, iters=case.iters, tol=0, **common), case)
        record.update(timing, hvp_norm=float(np.linalg.norm(np.asarray(hv))))
        return record, None
    raise Unsupported(case.op)


def run(case: Case, variant: str) -> dict:
    return run_cli(case) if variant == "flashsinkhorn-cli" else run_py(case)
