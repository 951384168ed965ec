#!/usr/bin/env python3
"""Python call overhead against the C++ call (issue 6: "a Python call at n = m = 1,000 within 20 µs of
the C++ call").

Axes (declared): n = m ∈ {1,000, 1}, d = 3, x, y ~ N(0, I) (seed 0; float32 = the float64 draw rounded),
ε = 0.1, C = ‖x − y‖², alternating solver, iters = 10, tol = 0 (fixed work), uniform weights, and
  device cpu     threads = 1, float32 and float64, precision following the dtype;
  device cuda    GPU 0, float32, precision fp32 and tf32 (--cuda-precisions): torch CUDA tensors, the
                 realistic ML case. Run first (they are short) when torch.cuda and the core's CUDA
                 backend are available and the C++ program was built with CUDA, else skipped with the
                 reason in the report ("skipped").
The same points everywhere: this script writes them to a raw file that the C++ program reads.

What is timed (wall clock per call, perf_counter / steady_clock, after warm-up):
  cpp            bench/call_overhead.cpp: `flashsinkhorn::solver(p, o).solve()` (construction included,
                 as in every Python call); with gradient=1 also `gradient_x(out)` (the SamplesLoss case).
  numpy          flashsinkhorn.sinkhorn(x, y, **options) on NumPy arrays, float32 and float64 — the call
                 itself between the two clock reads, as a user writes it (no wrapper function). CPU only.
  torch          the same on torch tensors that do not require grad: CPU tensors, or (device cuda) CUDA
                 tensors read in place on the GPU, potentials written into CUDA tensors (solve_into).
  samplesloss    SamplesLoss(blur=√ε, scaling=None, debias=False, cost_scale=1, solver='alternating',
                 iters=10, tol=0, threads=1, device=the row's device, precision=the row's) — the same
                 problem — forward + backward with x.requires_grad (one solve + one streamed ∇x), in one
                 small function; compared with cpp gradient=1.
  torch_python_path  (device cuda, when flashsinkhorn._torch_calls is built) the torch row with the CUDA
                 short path in Python instead of _torch_calls' C++ (python_path_call)
  floor          (device cuda) the least Python-level code around the same binding call: three new output
                 tensors, the current stream, one _core.new_solved_into with everything else prepared
                 beforehand (floor_call) — what Python-level code returning new CUDA tensors pays here
                 (flashsinkhorn._torch_calls, where built, does that work in C++ and can go below it).
  With device cuda the C++ program runs with --device cuda: the points in device memory as CUDA views,
  solve_into device buffers (and gradient_x into one), stream 0 — torch's current stream here. Both
  sides' calls return with their outputs complete (the core waits for its writes into the caller's
  memory); what the Python side enqueues after that (the 0-d cost's fill, SamplesLoss's scaling of
  the gradient) is launched, not waited for, as in a user's code.

Like for like: both sides must run the same compiled library (compiler, flags, -march=native or not).
Build the C++ program in the CMake tree the extension was built in (bench/CMakeLists.txt's
flashsinkhorn_call_overhead; tools/gpu_check.sh builds it in the wheel's own build tree). The program
reports whether it was built native; each (n, dtype) also stores the median core clock of both sides
(core_median_us) and their ratio, and a ratio outside [0.8, 1.25] is printed as a warning: a
different build, not overhead.

Two overhead estimates, both reported:
  diff_median    median(Python wall) − median(C++ wall). Unpaired: at n = 1,000 a call costs tens of
                 ms and the machine's noise (hundreds of µs) dwarfs 20 µs, so this is indicative only.
  diff_paired    median(Python wall − result.seconds) − median(C++ wall − result.total_seconds): each
                 call's wall time minus the core's own clock for that same call (construction + solve),
                 which cancels the solve's noise. Exact for everything outside the core's clock; it
                 does not see work the core does inside its clock (none differs between the callers:
                 the views are the same). For samplesloss the core's clock covers the forward solve
                 only: its paired difference still holds the gradient pass of both sides (whose noise
                 does not cancel).
Neither side counts the release of what the call produced (the C++ program destroys its solver and
result after its clock stops; the Python product is released after the clock too, and that release is
reported per row as release_median_us).
The n = 1 rows measure the fixed per-call overhead back to back, with warm caches (the solve itself is
~µs there). At n = 1,000 the code around the solve runs after tens of ms of solving, and after any
pause of milliseconds — even a C loop that touches almost no memory (bench/python_cold_call_probe.py)
— the caches have lost the Python path's code and data: each step then costs several times its warm
time (bench/python_cold_floor_probe.py times the steps no Python call can avoid).

Rounds: the C++ and Python measurements alternate `--rounds` times per case (drift hits both); the
reported median and quartiles pool every sample, and the per-round medians give the spread.

Robustness: `--budget-s` caps the run (the calls per round shrink to fit, at least 3); the report is
written after every (n, dtype), marked "complete": false until the end; an error or SIGTERM (a
`timeout`) prints its traceback and leaves the partial report.

Run: PYTHONPATH=build/python python3 bench/python_call_overhead.py [--bin PATH] [--rounds 3] [--label before]
     [--budget-s SECONDS] [--devices cpu,cuda] [--cuda-precisions fp32,tf32] [--repeats-cuda 400]
Writes bench/results/python_call_overhead_<date>[_<label>].json.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import faulthandler
import json
import math
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
EPS, ITERS, D = 0.1, 10, 3


def quantiles(samples: list[float]) -> dict:
    q = np.percentile(np.asarray(samples), [25, 50, 75])
    return {"median_us": q[1] * 1e6, "q1_us": q[0] * 1e6, "q3_us": q[2] * 1e6, "count": len(samples)}


class Stopped(Exception):
    """SIGTERM arrived (a `timeout` around the run): stop, print where, keep the partial report."""


def _stop(signum, frame):
    signal.signal(signum, signal.SIG_IGN)  # `timeout` may signal again (its process group): finish the report
    raise Stopped(f"signal {signum}")


class CppUnavailable(RuntimeError):
    """The C++ program cannot run this case here (exit 3: a build without CUDA, or no visible GPU)."""


def cpp_run(binary: str, data: Path, n: int, dtype: str, gradient: bool, repeats: int, device: str = "cpu",
            precision: str | None = None) -> dict:
    command = [binary, "--data", str(data), "--n", str(n), "--m", str(n), "--d", str(D), "--dtype", dtype,
               "--eps", str(EPS), "--iters", str(ITERS), "--threads", "1", "--repeats", str(repeats),
               "--warmup", str(max(5, repeats // 20)), "--gradient", "1" if gradient else "0"]
    if device != "cpu":
        command += ["--device", device]
    if precision is not None:
        command += ["--precision", precision]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode == 3:
        raise CppUnavailable(done.stderr.strip())
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} exited {done.returncode}: {done.stderr.strip()}")
    return json.loads(done.stdout)


def python_run(call, args: tuple, kwargs: dict, core_seconds, repeats: int,
               warmup: int) -> tuple[list[float], list[float], list[float], list[float]]:
    """Per-call wall seconds of `call(*args, **kwargs)`, wall − the core's own seconds, the core's
    seconds, and the seconds taken to release what the call produced. Only the call is between the
    clock reads; `core_seconds(product)` reads the core's clock afterwards. The product is released
    after the clock stops, as the C++ program destroys its solver and result after its clock stops
    (the release is timed separately and reported, not counted)."""
    for _ in range(warmup):
        call(*args, **kwargs)
    walls, slack, cores, release = [], [], [], []
    clock = time.perf_counter
    for _ in range(repeats):
        t0 = clock()
        product = call(*args, **kwargs)
        wall = clock() - t0
        core = core_seconds(product)
        t1 = clock()
        del product
        release.append(clock() - t1)
        walls.append(wall)
        slack.append(wall - core)
        cores.append(core)
    return walls, slack, cores, release


def report_header(args, fs, torch) -> dict:
    # FS_COMMIT first: tools/gpu_check.sh passes the development machine's commit, and the device's
    # copy of .git can be older than the tree it runs (session 40's file read b7cb38a for fbff233).
    commit = os.environ.get("FS_COMMIT") or subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"],
                                                           capture_output=True, text=True).stdout.strip()
    dirty = bool(subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "python", "bench"],
                                capture_output=True, text=True).stdout.strip())
    return {
        "benchmark": "python_call_overhead", "date": _dt.date.today().isoformat(), "commit": commit,
        "worktree_dirty": dirty, "label": args.label, "note": args.note, "package": str(Path(fs.__file__).parent),
        "cpp_binary": str(Path(args.bin).resolve()), "complete": False,
        "machine": {"platform": platform.platform(), "processor": platform.processor() or platform.machine(),
                    "cpus": os.cpu_count(), "python": sys.version.split()[0], "numpy": np.__version__,
                    "torch": torch.__version__},
        "axes": {"n=m": args.sizes, "d": D, "eps": EPS, "iters": ITERS, "tol": 0, "threads": 1, "solver": "alternating",
                 "devices": args.devices, "cuda_precisions": args.cuda_precisions, "rounds": args.rounds,
                 "cpus": args.cpus,
                 "repeats_large": args.repeats_large, "repeats_small": args.repeats_small,
                 "repeats_cuda": args.repeats_cuda, "budget_s": args.budget_s},
        "rows": [], "builds": [], "skipped": [],
    }


def fitted_repeats(requested: int, seconds_per_call: float, rounds: int, time_left: float | None,
                   cases_left: int) -> int:
    """Calls per round so that this case fits its share of the time left: per round up to 5 timed
    series (cpp, cpp + gradient, numpy, torch, samplesloss, the gradient ones ~1.5×) plus warm-ups."""
    if time_left is None:
        return requested
    per_call_round = seconds_per_call * rounds * 7.0
    return max(3, min(requested, int(time_left / max(cases_left, 1) / max(per_call_round, 1e-9))))


def floor_call(fs, torch, x, y, kw: dict):
    """The least Python code around sinkhorn()'s CUDA call, as a function of no arguments returning
    (core seconds, f, g, cost, solver): the three output tensors made, the caller's stream read, the
    one binding call (the same _core.new_solved_into as sinkhorn()'s) — everything else sinkhorn()
    does (the frame, the options, the input checks and addresses, the result object) done once,
    beforehand. Its paired difference with the C++ call is the floor of Python-level code that returns
    new CUDA tensors on this machine (row caller "floor"; _torch_calls works below the Python level)."""
    from flashsinkhorn._arrays import Frame, core_array, device_address
    from flashsinkhorn._options import options_for

    frame = Frame.of(x, y, None, None)
    options = options_for("sqeuclidean", kw["solver"], None, None, kw["iters"], kw["tol"], 10, 1.0, None, None,
                          None, False, kw.get("precision") or "fp32", kw["device"], kw["threads"], True, frame.cuda_index)
    xs, ys, eps, index = core_array(x, frame), core_array(y, frame), float(kw["eps"]), frame.cuda_index
    n, m, new_empty, solved_into = x.shape[0], y.shape[0], x.new_empty, fs._core.new_solved_into
    stream = torch._C._cuda_getCurrentRawStream

    def call():
        f, g, cost = new_empty(n), new_empty(m), new_empty(())
        fields = solved_into(xs, ys, None, None, eps, 1.0, None, None, options, stream(index), device_address(f),
                             device_address(g), None, None, device_address(cost))
        return fields[6], f, g, cost, fields[0]

    return call


def python_path_call(fs):
    """sinkhorn() with its CUDA short path in Python instead of flashsinkhorn._torch_calls (row
    "torch_python_path"; two module-attribute writes around the call are the difference in code)."""
    functional = fs._functional
    torch_calls = functional._TORCH_CALLS

    def call(x, y, **kw):
        functional._TORCH_CALLS = None
        try:
            return fs.sinkhorn(x, y, **kw)
        finally:
            functional._TORCH_CALLS = torch_calls
    return call


def measure(args, fs, torch, case: dict, n: int, dtype: str, data: Path, repeats: int, report: dict) -> None:
    """One case (device, precision) at one (n, dtype): the C++ program and the Python callers, alternating
    by round."""
    device, precision, kw, loss = case["device"], case["precision"], case["kw"], case["loss"]
    npt, tt = (np.float32, torch.float32) if dtype == "float32" else (np.float64, torch.float64)
    rng = np.random.default_rng(0)
    x64, y64 = rng.standard_normal((n, D)), rng.standard_normal((n, D))
    x, y = x64.astype(npt), y64.astype(npt)
    xt, yt = torch.from_numpy(x.copy()).to(device), torch.from_numpy(y.copy()).to(device)
    xg = xt.clone().requires_grad_(True)
    warmup = max(3, repeats // 10)

    def samplesloss_call(points, targets):
        value = loss(points, targets)
        seconds = value.grad_fn.solve.result.seconds  # the core clock of the forward (_autograd._Solve)
        value.backward()
        grad, points.grad = points.grad, None
        return seconds, value, grad

    def result_seconds(result):
        return result.seconds

    def first(product):
        return product[0]

    cases = {"numpy": (fs.sinkhorn, (x, y), kw, result_seconds, False),
             "torch": (fs.sinkhorn, (xt, yt), kw, result_seconds, False),
             "samplesloss": (samplesloss_call, (xg, yt), {}, first, True)}
    if device != "cpu":
        del cases["numpy"]
        cases["floor"] = (floor_call(fs, torch, xt, yt, kw), (), {}, first, False)
        if fs._functional._TORCH_CALLS is not None:
            cases["torch_python_path"] = (python_path_call(fs), (xt, yt), kw, result_seconds, False)
    samples = {name: {"wall": [], "slack": [], "core": [], "release": [], "round_medians": []} for name in cases}
    cpp = {g: {"medians": [], "q1": [], "q3": [], "slack": [], "core": []} for g in (False, True)}
    for _ in range(args.rounds):
        for gradient in (False, True):
            r = cpp_run(args.bin, data, n, dtype, gradient, repeats, device, precision)
            for key, field in (("medians", "median_s"), ("q1", "q1_s"), ("q3", "q3_s"), ("slack", "slack_median_s"),
                               ("core", "core_median_s")):
                cpp[gradient][key].append(r[field])
            report["cpp_native"] = r.get("native")
        for name, (call, call_args, call_kwargs, core_seconds, _) in cases.items():
            walls, slack, cores, release = python_run(call, call_args, call_kwargs, core_seconds, repeats, warmup)
            for key, values in (("wall", walls), ("slack", slack), ("core", cores), ("release", release)):
                samples[name][key] += values
            samples[name]["round_medians"].append(statistics.median(walls) * 1e6)

    rows = report["rows"]
    first_row = len(rows)
    where = {"device": device, "precision": precision or ("fp32" if dtype == "float32" else "fp64")}
    for gradient in (False, True):
        c = cpp[gradient]
        cpp_median = statistics.median(c["medians"]) * 1e6
        cpp_slack = statistics.median(c["slack"]) * 1e6
        cpp_core = statistics.median(c["core"]) * 1e6
        rows.append({"n": n, "dtype": dtype, **where, "caller": "cpp" + ("+gradient_x" if gradient else ""),
                     "median_us": cpp_median, "q1_us": statistics.median(c["q1"]) * 1e6,
                     "q3_us": statistics.median(c["q3"]) * 1e6, "round_medians_us": [v * 1e6 for v in c["medians"]],
                     "slack_median_us": cpp_slack, "core_median_us": cpp_core, "repeats_per_round": repeats})
        for name, (*_, wants_gradient) in cases.items():
            if wants_gradient != gradient:
                continue
            s = samples[name]
            row = {"n": n, "dtype": dtype, **where, "caller": name, **quantiles(s["wall"]),
                   "round_medians_us": s["round_medians"], "slack_median_us": statistics.median(s["slack"]) * 1e6,
                   "core_median_us": statistics.median(s["core"]) * 1e6,
                   "release_median_us": statistics.median(s["release"]) * 1e6, "repeats_per_round": repeats}
            row["diff_median_us"] = row["median_us"] - cpp_median
            row["diff_paired_us"] = row["slack_median_us"] - cpp_slack
            row["core_ratio"] = row["core_median_us"] / cpp_core if cpp_core > 0 else None
            rows.append(row)
    for row in rows[first_row:]:
        print(f"{row['device']:4s} {row['precision']:4s} n={row['n']:5d} {row['dtype']:8s} {row['caller']:15s} "
              f"median {row['median_us']:10.1f} µs [IQR {row.get('q1_us', 0):.1f}–{row.get('q3_us', 0):.1f}]"
              + (f"  diff {row['diff_median_us']:+8.1f} µs  paired {row['diff_paired_us']:+6.1f} µs"
                 f"  core ratio {row['core_ratio']:.2f}" if "diff_median_us" in row
                 else f"  slack {row['slack_median_us']:.1f} µs  core {row['core_median_us']:.1f} µs"),
              flush=True)
        ratio = row.get("core_ratio")
        if n >= 1000 and ratio is not None and not 0.8 <= ratio <= 1.25:
            print(f"WARNING: {device} n={n} {dtype} {row['caller']}: the core clock differs from the C++ program's "
                  f"by {ratio:.2f}x — are both built alike (native: C++ {report.get('cpp_native')})?", flush=True)


def cuda_unavailable(fs, torch) -> str | None:
    """Why the CUDA rows cannot run in this process (None: they can)."""
    if not torch.cuda.is_available():
        return "torch.cuda is not available"
    if not fs.cuda_available():
        return "the flashsinkhorn core has no CUDA backend or sees no GPU"
    return None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=str(REPO / "build" / "bench" / "flashsinkhorn_call_overhead"))
    ap.add_argument("--repeats-large", type=int, default=60, help="calls per round at n = 1,000 (cpu)")
    ap.add_argument("--repeats-small", type=int, default=3000, help="calls per round at n = 1 (cpu)")
    ap.add_argument("--repeats-cuda", type=int, default=400, help="calls per round, device cuda (both sizes)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--sizes", default="1000,1")
    ap.add_argument("--devices", default="cpu,cuda", help="cuda rows run first, when available")
    ap.add_argument("--cuda-precisions", default="fp32,tf32")
    ap.add_argument("--budget-s", type=float, default=None, help="wall-time cap: fewer calls per round to fit")
    ap.add_argument("--label", default="")
    ap.add_argument("--out", default=None)
    ap.add_argument("--note", default="", help="stored in the report (e.g. which package build was measured)")
    ap.add_argument("--cpus", default=None,
                    help="CPU ids to pin this process and the C++ program to (e.g. 2,3): less scheduler noise")
    args = ap.parse_args()
    faulthandler.enable()
    if args.cpus:  # the C++ program, a child process, inherits the affinity
        os.sched_setaffinity(0, {int(c) for c in args.cpus.split(",")})
    signal.signal(signal.SIGTERM, _stop)
    started = time.monotonic()

    import torch

    import flashsinkhorn as fs

    torch.set_num_threads(1)
    report = report_header(args, fs, torch)
    suffix = f"_{args.label}" if args.label else ""
    out = (Path(args.out) if args.out
           else REPO / "bench" / "results" / f"python_call_overhead_{report['date']}{suffix}.json")

    def write() -> None:
        out.write_text(json.dumps(report, indent=1) + "\n")

    def make_case(device: str, precision: str | None) -> dict:
        kw = dict(eps=EPS, iters=ITERS, tol=0.0, threads=1, device=device, solver="alternating")
        if precision is not None:
            kw["precision"] = precision
        loss = fs.SamplesLoss("sinkhorn", p=2, blur=math.sqrt(EPS), scaling=None, debias=False, cost_scale=1.0,
                              solver="alternating", iters=ITERS, tol=0.0, threads=1, device=device, precision=precision)
        return {"device": device, "precision": precision, "kw": kw, "loss": loss}

    sizes = [int(s) for s in args.sizes.split(",")]
    devices = args.devices.split(",")
    plan = []  # (case, n, dtype): the CUDA rows first (short; the CPU rows then share what time is left)
    if "cuda" in devices:
        reason = cuda_unavailable(fs, torch)
        if reason is None:
            plan += [(make_case("cuda", precision), n, "float32") for precision in args.cuda_precisions.split(",")
                     for n in sizes]
        else:
            report["skipped"].append({"device": "cuda", "reason": reason})
            print(f"cuda rows skipped: {reason}", flush=True)
    if "cpu" in devices:
        cpu = make_case("cpu", None)
        plan += [(cpu, n, dtype) for n in sizes for dtype in ("float32", "float64")]
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for index, (case, n, dtype) in enumerate(plan):
                device, precision, kw, loss = case["device"], case["precision"], case["kw"], case["loss"]
                rng = np.random.default_rng(0)
                x64, y64 = rng.standard_normal((n, D)), rng.standard_normal((n, D))
                npt = np.float32 if dtype == "float32" else np.float64
                x, y = x64.astype(npt), y64.astype(npt)
                data = Path(tmp) / f"points_{n}_{dtype}.bin"
                np.concatenate([x, y]).tofile(data)
                # sanity: the same problem everywhere (float32: the two sides round alike only when built
                # alike; a float32 rounding apart is accepted; on the GPU, reductions in another order)
                # — and the time of one call, for the budget.
                try:
                    probe = cpp_run(args.bin, data, n, dtype, False, 3, device, precision)
                except CppUnavailable as why:
                    report["skipped"].append({"device": device, "precision": precision, "n": n, "reason": str(why)})
                    print(f"{device} {precision} n={n} skipped: {why}", flush=True)
                    continue
                ref = probe["cost"]
                xt, yt = torch.from_numpy(x).to(device), torch.from_numpy(y).to(device)
                got = float(fs.sinkhorn(xt, yt, **kw).cost)
                tol = (1e-5 if dtype == "float32" else 1e-9) * max(1.0, abs(ref))
                if device != "cpu":
                    tol = 1e-4 * max(1.0, abs(ref))
                if device == "cpu":
                    assert abs(fs.sinkhorn(x, y, **kw).cost - ref) <= tol, (fs.sinkhorn(x, y, **kw).cost, ref)
                assert abs(got - ref) <= tol, (device, precision, got, ref)
                assert abs(float(loss(xt, yt)) - ref) <= tol
                time_left = None if args.budget_s is None else args.budget_s - (time.monotonic() - started)
                requested = (args.repeats_cuda if device != "cpu"
                             else args.repeats_large if n >= 1000 else args.repeats_small)
                repeats = fitted_repeats(requested, probe["median_s"], args.rounds, time_left, len(plan) - index)
                if time_left is not None and probe["median_s"] * args.rounds * 7.0 * repeats > time_left:
                    # even the fewest calls would overrun the budget (and the caller's timeout): leave it out
                    report["skipped"].append({"device": device, "precision": precision, "n": n, "dtype": dtype,
                                              "reason": f"budget: {time_left:.0f} s left"})
                    print(f"{device} n={n} {dtype} skipped: {time_left:.0f} s of the budget left", flush=True)
                    continue
                measure(args, fs, torch, case, n, dtype, data, repeats, report)
                write()
        report["complete"] = True
    except (Exception, Stopped):
        traceback.print_exc()
        print(f"call-overhead bench stopped after {time.monotonic() - started:.0f} s; partial report in {out}",
              file=sys.stderr, flush=True)
        write()
        return 1
    write()
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
