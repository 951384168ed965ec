"""flashsinkhorn (ours) in the suite: `flashsinkhorn-cli` (the `flashsinkhorn solve` command on the
suite's .npy files) and `flashsinkhorn-py` (the Python package, NumPy in). The kernel-only timings of
the fixed-iteration forward and of forward + gradient come from the C++ benchmarks
(bench/gpu_forward_bench.cu, bench/plan_pass_bench.cu; run_device.sh runs them on the same sizes);
these drivers add the same-input runs, the converge operation and the marginal error.

flashsinkhorn-cli  forward: --iters N --tol 0; converge: --scaling S --tol T --iters max_iters; the
                   time is the JSON's solve_seconds (the loop; `ms_process` is the whole process,
                   reading the files and CUDA start-up included). One process per timed call.
                   Device memory: the parent's nvidia-smi sampling (the CLI reports none).
flashsinkhorn-py   the Python package on torch tensors of the case's device (CUDA tensors are read in
                   place, on the current stream), timed like the torch peers (CUDA events):
                   forward / converge: sinkhorn(x, y, a, b, …); forward_gradient: the cost, then
                   torch.autograd.grad w.r.t. x; hvp: Solver(…).solve() then Solver.hvp (the exact
                   implicit HVP, CG to HVP_CG_TOL, the sparse preconditioner on both devices).
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

from protocol import Case, Unsupported, ensure_data, first_call_done, hvp_direction, load_data, median, reach_record

REPO = Path(__file__).resolve().parents[2]
# The HVP's CG tolerance (relative residual): flash-sinkhorn reached 2.2e-5 with its defaults on the
# issue-5 protocol (bench/results/hvp_h200_2026-11-30_session9.jsonl).
HVP_CG_TOL = 2e-5


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
               "--eps", str(case.eps), "--precision", case.precision, "--device", device, "--quiet"]
        if case.evaluate:  # the potentials for the suite's own evaluation (writing transport_x costs a plan pass)
            cmd += ["--out", out_dir]
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
            if index == 0:
                first_call_done(1e3 * wall)
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
        if case.reach:  # the one call as a user runs it: the process, its reading and preparation included
            record.update(reach_record(1e3 * walls[0], "the first and only CLI process, wall clock (reach mode)"))
        if device == "cpu":
            own = [r["peak_host_rss_bytes"] for r in runs if r.get("peak_host_rss_bytes") is not None]
            if own:  # the CLI's VmHWM: ru_maxrss of a child keeps this (Python) parent's peak from before exec
                record["peak_host_rss_bytes"] = max(own)
                record["peak_host_rss_source"] = "the CLI's own VmHWM (its JSON's peak_host_rss_bytes)"
            else:
                import resource

                record["peak_host_rss_bytes"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
                record["peak_host_rss_source"] = "ru_maxrss of the CLI processes (includes this parent's peak)"
        if case.op == "forward":
            record["ms_per_iteration"] = record["ms"] / case.iters
        else:
            record["own_criterion"] = "L1 marginal error (SPEC §1) every 10 iterations"
        if not case.evaluate:
            return record, None
        f, g = np.load(Path(out_dir) / "f.npy"), np.load(Path(out_dir) / "g.npy")
    return record, (load_data(case, "float64" if case.precision == "fp64" else "float32"), f, g)


def run_py(case: Case, relaxation: float | str = 1.0) -> dict:
    import torch

    import flashsinkhorn as fs

    from protocol import LibraryMemory, set_torch_tf32, time_torch, time_torch_forward_gradient, torch_dtype

    host = load_data(case, "float64" if case.precision == "fp64" else "float32")
    device = "cuda" if case.device.startswith("cuda") else "cpu"
    if device == "cuda":
        set_torch_tf32(case.precision)
    dt, dev = torch_dtype(case.precision), torch.device(case.device)
    x, y, a, b = (torch.as_tensor(v, dtype=dt, device=dev) for v in host)
    common = dict(eps=case.eps, precision=case.precision, device=device, threads=case.threads)
    record = {"version": fs.__version__, "inputs": f"torch {dt} tensors on {case.device} (read in place)"}

    # Our buffers come from the library's own device pool, which torch's allocator does not see.
    memory = LibraryMemory(fs.reset_peak_memory_stats, fs.max_memory_allocated, "flashsinkhorn.max_memory_allocated")

    def potentials(res):
        return (host, res.f.detach().double().cpu().numpy(), res.g.detach().double().cpu().numpy())

    if case.op == "forward":
        timing, res = time_torch(lambda: fs.sinkhorn(x, y, a, b, iters=case.iters, tol=0, **common), case, memory)
        record.update(timing, ms_per_iteration=timing["ms"] / case.iters, value_reported=float(res.cost),
                      own_marginal_error=res.marginal_error, library_seconds=res.seconds)
        return record, potentials(res)
    if case.op == "converge":
        timing, res = time_torch(lambda: fs.sinkhorn(x, y, a, b, iters=case.max_iters, tol=case.tol,
                                                     scaling=case.scaling, relaxation=relaxation, **common),
                                 case, memory)
        record.update(timing, iterations=res.iterations, converged=res.converged, relaxation=relaxation,
                      own_marginal_error=res.marginal_error,
                      own_criterion="L1 marginal error (SPEC §1) every 10 iterations", library_seconds=res.seconds)
        return record, potentials(res)
    xg = x.detach().clone().requires_grad_(True)
    if case.op == "forward_gradient":
        record["peer_config"] = f"sinkhorn(iters={case.iters}, tol=0).cost, torch.autograd.grad w.r.t. x " \
                                "(envelope theorem: one streamed gradient pass)"
        record.update(time_torch_forward_gradient(
            lambda xs: fs.sinkhorn(xs, y, a, b, iters=case.iters, tol=0, **common).cost, xg, case, memory))
        return record, None
    if case.op == "hvp":
        direction = torch.as_tensor(hvp_direction(case.n, case.d), dtype=dt, device=dev)
        # The plan's top entries on both backends: at d = 64, ε = 0.1 the diagonal one needs ~950 CG
        # iterations where this one needs 5 (CPU, fp64, 1,000 points, session 49).
        preconditioner = "sparse"

        def call():
            solver = fs.Solver(x, y, a, b, iters=case.iters, tol=0, **common)
            solver.solve()
            return solver.hvp(direction, tol=HVP_CG_TOL, iters=1000, preconditioner=preconditioner)
        timing, product = time_torch(call, case, memory)
        record.update(timing, hvp_norm=float(product.product.norm()), cg_iterations=product.cg_iterations,
                      plan_passes=product.plan_passes, cg_relative_residual=product.relative_residual,
                      redone_in_float64=product.redone_in_float64,
                      hvp_method=f"Solver.hvp: implicit (exact) HVP, CG to {HVP_CG_TOL:g} relative, "
                                 f"preconditioner '{preconditioner}'")
        return record, None
    raise Unsupported(case.op)


def run(case: Case, variant: str) -> dict:
    if variant == "flashsinkhorn-cli":
        return run_cli(case)
    return run_py(case, relaxation="auto" if variant == "flashsinkhorn-py-relaxed" else 1.0)
