#!/usr/bin/env python3
"""Benchmark suite driver (issue 7): the (operation, d, n, implementation, precision) cases, each under
a time limit, so that an out-of-memory error, a crash or a hang is recorded (with the exact error text)
and the sweep goes on. Protocol: protocol.py.

Processes: one per group — the cases of one (operation, d, implementation, precision), n ascending —
so that a peer's imports, CUDA context and JIT start-up are paid once per group, not once per n. The
child announces each case and prints its result; the parent times each case against the budget and
kills the group's process on a timeout.

Stop rule: per group, once a case fails (timeout, oom, error, crash), the larger n are recorded as
'skipped' and not run: the largest n that succeeded is the one the peer reaches within the per-case
budget. Cases not started by --deadline are recorded as 'not_run'.

Reach (--reach): the issue's "largest n within 10 minutes" — one call per case (no warm-up, no
timed repeats, no evaluation), --budget 600 and --start-up 0 make the stop rule's answer the issue's.

Memory: the framework's own peak where it has one (reset per case; JAX's is the process's peak, which
n ascending makes the current case's), and nvidia-smi's memory.used sampled from the case's start to
the end of its timed calls (the marginal-error evaluation after them is not the peer's), minus its
value before the group's process started (the CUDA context is included).

    python3 bench/suite/run.py --impls flashsinkhorn-cli,flash-sinkhorn,geomloss-tensorized \
        --ops forward,converge --ns 1000,10000 --ds 3,64 --precisions tf32 --budget 600 \
        --out bench/results/suite_<date>.jsonl
Output: one JSON object per case (appended), with machine, commit (FS_COMMIT), date and versions.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import glob
import importlib
import json
import os
import queue
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import protocol  # noqa: E402
from protocol import Case, Unsupported  # noqa: E402

# implementation → (driver module, precisions it has, dense: n×m memory)
IMPLS = {
    "flashsinkhorn-cli": ("drv_flashsinkhorn", {"fp32", "tf32", "bf16", "fp64"}, False),
    "flashsinkhorn-py": ("drv_flashsinkhorn", {"fp32", "tf32", "bf16", "fp64"}, False),
    "flashsinkhorn-py-relaxed": ("drv_flashsinkhorn", {"fp32", "tf32", "bf16", "fp64"}, False),
    "flash-sinkhorn": ("drv_flash_sinkhorn", {"fp32", "tf32", "bf16"}, False),
    "geomloss-tensorized": ("drv_geomloss", {"fp32", "tf32", "fp64"}, True),
    "geomloss-online": ("drv_geomloss", {"fp32", "fp64"}, False),
    "ott-dense": ("drv_ott", {"fp32", "tf32", "fp64"}, True),
    "ott-online": ("drv_ott", {"fp32", "tf32", "fp64"}, False),
    "pot-dense-log": ("drv_pot", {"fp32", "tf32", "fp64"}, True),
    "pot-lazy": ("drv_pot", {"fp32", "tf32", "fp64"}, False),
}
DEFAULT_IMPLS = tuple(IMPLS)  # the sweep's default: every implementation above
# Implementations that time some operations only; the sweep plans no other case for them (no rows).
# flashsinkhorn-py-relaxed: the package's call with relaxation="auto" (adaptive over-relaxation at the
# target ε, docs/math.md), which changes nothing in a fixed-iteration forward.
OPS_OF = {"flashsinkhorn-py-relaxed": {"converge"}}
# For tests/python/test_bench_suite.py: FS_SUITE_TEST_IMPLS = {name: [driver module on PYTHONPATH, [precisions]]}.
IMPLS.update({name: (module, set(precisions), False)
              for name, (module, precisions) in json.loads(os.environ.get("FS_SUITE_TEST_IMPLS", "{}")).items()})
OPS = ("forward", "forward_gradient", "hvp", "converge")
FAILED = ("timeout", "oom", "error", "crash")
CASE_BEGIN = "SUITE_CASE_BEGIN "  # the child starts case number …
STOPPED = "SUITE_STOPPED"  # the child started no more cases: the deadline passed
MEASURED = "SUITE_MEASURED"  # the case's timed calls are done (its marginal-error evaluation follows)


# ----------------------------------------------------------------------------- one case (child side)
def oom_text(text: str) -> bool:
    t = text.lower()
    return any(k in t for k in ("out of memory", "outofmemory", "resource_exhausted", "cuda_error_out_of_memory",
                                "cannot allocate memory", "memoryerror"))


def run_case(case: Case) -> dict:
    record = {"status": "ok"}
    try:
        module = importlib.import_module(IMPLS[case.impl][0])
        measured, potentials = module.run(case, case.impl)
        print(MEASURED, flush=True)  # the parent's memory peak ends here: the evaluation below is not the peer's
        record.update(measured)
        if potentials is not None and case.evaluate:
            (x, y, a, b), f, g = potentials
            record["value"] = protocol.dual_value(a, b, f, g)
            record.update(protocol.marginal_errors(x, y, a, b, f, g, case.eps, case.device))
            if case.op == "converge":
                record["reached_tol"] = bool(record["marginal_error"] <= case.tol)
    except Unsupported as why:
        record = {"status": "unsupported", "reason": str(why)}
    except BaseException as error:  # noqa: BLE001 — every failure is a result here
        text = f"{type(error).__name__}: {error}"
        record = {"status": "oom" if oom_text(text) or oom_text(type(error).__name__) else "error",
                  "error": text[-4000:], "traceback": traceback.format_exc()[-3000:]}
    record["versions"] = protocol.versions()
    return record


def run_group(cases: list[Case], not_after: float) -> None:
    """The child's loop: announce, run and print each case; stop after a failure or at the deadline."""
    if cases[0].threads:
        try:
            import torch

            torch.set_num_threads(cases[0].threads)
        except ImportError:
            pass
    for index, case in enumerate(cases):
        if time.time() > not_after:
            print(STOPPED, flush=True)
            return
        print(f"{CASE_BEGIN}{index}", flush=True)
        record = run_case(case)
        print(protocol.RESULT_MARKER + json.dumps(record), flush=True)
        if record["status"] in FAILED:
            return
        gc.collect()  # the next, larger case starts from the allocators' cached blocks given back
        if "torch" in sys.modules and sys.modules["torch"].cuda.is_available():
            sys.modules["torch"].cuda.empty_cache()


# ----------------------------------------------------------------------------- sweep (parent side)
def visible_gpu() -> str:
    """nvidia-smi's index of the GPU the cases run on: the first of CUDA_VISIBLE_DEVICES (run_lanes.sh
    gives each lane one), else 0."""
    return (os.environ.get("CUDA_VISIBLE_DEVICES") or "0").split(",")[0].strip() or "0"


class SmiSampler:
    """Peak of nvidia-smi's memory.used (whole device) while a case runs, minus the value before it."""

    def __init__(self, enabled: bool):
        self.peak = self.baseline = None
        self.proc = None
        if not enabled:
            return
        try:
            self.proc = subprocess.Popen(["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits",
                                          "-i", visible_gpu(), "-lms", "100"], stdout=subprocess.PIPE,
                                         stderr=subprocess.DEVNULL, text=True)
        except OSError:
            return
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()
        time.sleep(0.3)
        self.baseline, self.peak = self.peak, None

    def _read(self):
        for line in self.proc.stdout:
            try:
                value = int(line.strip()) * 1024 * 1024
            except ValueError:
                continue
            self.peak = value if self.peak is None else max(self.peak, value)

    def mark(self) -> None:
        """Starts a new case: the peak is taken over the samples from here on."""
        self.peak = None

    def case_peak(self) -> dict:
        if self.peak is None or self.baseline is None:
            return {}
        return {"peak_device_bytes_smi": self.peak - self.baseline, "device_bytes_before_smi": self.baseline}

    def stop(self) -> dict:
        if self.proc is None:
            return {}
        self.proc.terminate()
        self.proc.wait()
        return self.case_peak()


def exports(path: str | None) -> dict:
    """The `export K="V"` lines of a shell file (keops_doctor.py's choice), read when a group starts:
    the doctor may still be running when the sweep begins (run_lanes.sh)."""
    if not path or not Path(path).is_file():
        return {}
    pairs = (line[len("export "):].split("=", 1) for line in Path(path).read_text().splitlines()
             if line.startswith("export ") and "=" in line)
    return {k: v.strip().strip('"') for k, v in pairs}


def case_env(case: Case, keops_env: str | None = None) -> dict:
    env = dict(os.environ, PYTHONUNBUFFERED="1", XLA_PYTHON_CLIENT_PREALLOCATE="false")
    if case.impl == "geomloss-online":
        env.update(exports(keops_env))
    if case.threads:
        env.update(OMP_NUM_THREADS=str(case.threads), MKL_NUM_THREADS=str(case.threads),
                   OPENBLAS_NUM_THREADS=str(case.threads),
                   XLA_FLAGS=f"--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads={case.threads}")
    return env


def address_space_limit(gigabytes: float | None):
    """A preexec_fn that caps the child's address space (RLIMIT_AS) at `gigabytes` (None: no cap), so that
    a dense peer that outgrows the machine fails with its own MemoryError instead of waking the kernel's
    OOM killer (which can take the sweep, or the session, with it)."""
    if gigabytes is None:
        return None
    limit = int(gigabytes * 2**30)
    return lambda: resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def launch_group(cases: list[Case], budget: float, not_after: float, keops_env: str | None = None,
                 start_up: float = 0.0, memory_limit: float | None = None):
    """Runs one group's cases in one child process; yields one record per case, in order (failed,
    then 'skipped' for the rest after a failure, or 'not_run' for those the deadline left). The first
    case may take `start_up` seconds more than the budget: the process's imports and a peer's JIT
    compilation and autotuning (flash-sinkhorn's HVP autotunes for ~100 s) land in it."""
    sampler = SmiSampler(cases[0].device.startswith("cuda"))
    stderr = tempfile.TemporaryFile(mode="w+")
    proc = subprocess.Popen([sys.executable, __file__, "--group", json.dumps([c.to_json() for c in cases]),
                             "--not-after", repr(not_after)], stdout=subprocess.PIPE, stderr=stderr, text=True,
                            env=case_env(cases[0], keops_env), start_new_session=True,
                            preexec_fn=address_space_limit(memory_limit))
    lines: queue.Queue = queue.Queue()

    def read():
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)
    threading.Thread(target=read, daemon=True).start()

    def stderr_tail(size: int) -> str:
        stderr.seek(0)
        return stderr.read()[-size:]

    def kill():
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # the CLI driver's processes too
        except ProcessLookupError:
            pass
        proc.wait()

    began = time.perf_counter()  # the first case's time includes the process's start and imports
    for index, case in enumerate(cases):
        record, stopped, peak, first_call_ms = None, False, None, None
        limit = time.perf_counter() + budget + (start_up if index == 0 else 0.0)
        while record is None and not stopped:
            try:
                line = lines.get(timeout=max(limit - time.perf_counter(), 0.0))
            except queue.Empty:
                kill()
                allowed = budget + (start_up if index == 0 else 0.0)
                record = {"status": "timeout", "error": f"not done within the {allowed:g} s budget",
                          "stderr_tail": stderr_tail(1500)}
                # in the first call (imports, JIT compilation, autotuning) or in the timed calls
                if first_call_ms is None:
                    record["timed_out_in"] = "the first call (imports, JIT, autotuning included)"
                else:
                    record["timed_out_in"] = "the timed calls"
                    record["first_call_ms"] = first_call_ms
                break
            if line is None:
                proc.wait()
                status = "oom" if oom_text(stderr_tail(20000)) else "crash"
                record = {"status": status, "error": f"exit status {proc.returncode}" + (
                    f" (signal {-proc.returncode})" if proc.returncode < 0 else ""), "stderr_tail": stderr_tail(4000)}
            elif line.startswith(CASE_BEGIN):
                sampler.mark()
                if index:
                    began = time.perf_counter()
            elif line.startswith(protocol.FIRST_CALL_MARKER):
                first_call_ms = float(line[len(protocol.FIRST_CALL_MARKER):])
            elif line.startswith(MEASURED):
                peak = sampler.case_peak()
            elif line.startswith(STOPPED):
                stopped = True
            elif line.startswith(protocol.RESULT_MARKER):
                record = json.loads(line[len(protocol.RESULT_MARKER):])
        if stopped:
            for rest in cases[index:]:
                yield rest, {"status": "not_run", "reason": "the sweep's deadline passed"}
            break
        if record["status"] in FAILED and "stderr_tail" not in record:
            record["stderr_tail"] = stderr_tail(1500)
        record["wall_s"] = time.perf_counter() - began
        if index == 0:
            record["wall_includes"] = "the process's start, imports and CUDA context (first case of its group)"
        scope = "the timed calls (evaluation excluded)" if peak is not None else "the whole case"
        peak = peak if peak is not None else sampler.case_peak()
        if peak:  # (no GPU sampling: nothing)
            record.update(peak, peak_device_bytes_smi_scope=scope)
        yield case, record
        if record["status"] in FAILED:
            for rest in cases[index + 1:]:
                yield rest, {"status": "skipped", "reason": f"n = {case.n} ended with status {record['status']}"}
            break
    sampler.stop()
    if proc.poll() is None:
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            kill()
    stderr.close()


FINAL = {"ok", "oom", "timeout", "crash", "error", "unsupported"}  # statuses a rerun would only repeat
ENDS_A_GROUP = {"oom", "timeout", "crash"}  # the stop rule: larger n of the group would end the same way


def done_cases(patterns: list[str]) -> dict[tuple, str]:
    """{(impl, op, d, precision, device, eps, n): status} of the suite's rows with a final status in the
    JSON-lines files matching `patterns` (globs)."""
    measured: dict[tuple, str] = {}
    for pattern in patterns:
        for path in sorted(glob.glob(pattern)):
            for line in Path(path).read_text().splitlines():
                row = json.loads(line) if line.startswith("{") else {}
                if row.get("suite") != "flashsinkhorn-bench-suite" or row.get("status") not in FINAL:
                    continue
                key = (row["impl"], row["op"], row["d"], row["precision"], row["device"],
                       row.get("eps", protocol.EPS), row["n"])
                measured[key] = row["status"]
    return measured


def already_measured(case: Case, measured: dict[tuple, str]) -> str | None:
    """Why `case` need not run again: it has a final status, or a smaller n of its group ended the group."""
    group = (case.impl, case.op, case.d, case.precision, case.device, case.eps)
    status = measured.get((*group, case.n))
    if status is not None:
        return f"measured before ({status})"
    ended = [key[-1] for key, s in measured.items() if key[:-1] == group and s in ENDS_A_GROUP and key[-1] < case.n]
    return f"n = {min(ended)} ended its group before" if ended else None


def sweep(args) -> int:
    impls = [i for i in args.impls.split(",") if i]
    for impl in impls:
        if impl not in IMPLS:
            sys.exit(f"unknown implementation {impl!r}; known: {', '.join(IMPLS)}")
    ops = [o for o in args.ops.split(",") if o]
    ns = sorted(int(float(v)) for v in args.ns.split(","))
    ds = [int(v) for v in args.ds.split(",")]
    precisions = [p for p in args.precisions.split(",") if p]
    for impl in impls:  # said, not silent: e.g. GeomLoss online (KeOps) has no tf32
        if not set(precisions) & IMPLS[impl][1]:
            print(f"run.py: {impl} plans no case: it runs {', '.join(sorted(IMPLS[impl][1]))}, not "
                  f"{', '.join(precisions)}", file=sys.stderr, flush=True)
    header = {"suite": "flashsinkhorn-bench-suite", "schema": 1, "machine": protocol.machine(),
              "commit": protocol.commit(), "command": " ".join(sys.argv)}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    not_after = time.time() + args.deadline
    measured = done_cases(args.skip_done) if args.skip_done else {}
    with out.open("a") as sink:
        for op in ops:
            for d in ds:
                for impl in impls:
                    if op not in OPS_OF.get(impl, OPS):
                        continue
                    for precision in precisions:
                        if precision not in IMPLS[impl][1]:
                            continue
                        cases = [Case(impl=impl, op=op, n=n, d=d, precision=precision, device=args.device,
                                      warmup=0 if args.reach else args.warmup,
                                      repeats=1 if args.reach else args.repeats, threads=args.threads,
                                      data_dir=args.data_dir, max_iters=args.max_iters, tol=args.tol,
                                      scaling=args.scaling, iters=args.hvp_iters if op == "hvp" else args.iters,
                                      eps=args.eps, evaluate=not (args.no_eval or args.reach), reach=args.reach)
                                 for n in ns]
                        if measured:  # --skip-done: the grid's gaps only
                            skipped = [c for c in cases if already_measured(c, measured)]
                            for case in skipped:
                                print(f"{op:<16} d={d:<5} n={case.n:<8} {impl:<20} {precision:<5} not rerun: "
                                      f"{already_measured(case, measured)}", file=sys.stderr, flush=True)
                            cases = [c for c in cases if c not in skipped]
                            if not cases:
                                continue
                        if time.time() > not_after:
                            late = {"status": "not_run", "reason": "the sweep's deadline passed"}
                            results = ((c, dict(late)) for c in cases)
                        else:
                            for case in cases:
                                protocol.ensure_data(args.data_dir, case.n, d,
                                                     "float64" if precision == "fp64" else "float32")
                            results = launch_group(cases, args.budget, not_after, args.keops_env, args.start_up,
                                                   args.memory_limit)
                        for case, result in results:
                            row = {**header, **dataclasses.asdict(case), "date": protocol.now(),
                                   "memory_limit_gb": args.memory_limit, **result}
                            sink.write(json.dumps(row) + "\n")
                            sink.flush()
                            summary = row.get("ms", row.get("error", row.get("reason", "")))
                            print(f"{op:<16} d={d:<5} n={case.n:<8} {impl:<20} {precision:<5} {row['status']:<11} "
                                  f"{str(summary)[:110]}", file=sys.stderr, flush=True)
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--group", help=argparse.SUPPRESS)  # the child: a JSON list of cases
    ap.add_argument("--not-after", type=float, default=float("inf"), help=argparse.SUPPRESS)
    ap.add_argument("--stamp", metavar="COMMAND",
                    help="copy JSON lines from stdin to stdout with machine, commit, date and COMMAND added")
    ap.add_argument("--impls", default=",".join(DEFAULT_IMPLS))
    ap.add_argument("--ops", default="forward,forward_gradient,hvp,converge")
    ap.add_argument("--ns", default="1000,10000,50000,200000,1000000")
    ap.add_argument("--ds", default="3,8,64,512,1024")
    ap.add_argument("--precisions", default="tf32")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--budget", type=float, default=600, help="seconds per case (the stop rule's limit)")
    ap.add_argument("--deadline", type=float, default=1e9, help="seconds after which no case starts")
    ap.add_argument("--start-up", type=float, default=120,
                    help="seconds the first case of each group may take beyond --budget (imports, JIT, autotuning)")
    ap.add_argument("--memory-limit", type=float, default=None, metavar="GB",
                    help="cap each case process's address space (RLIMIT_AS), e.g. below a CPU machine's memory")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--iters", type=int, default=protocol.ITERS)
    ap.add_argument("--hvp-iters", type=int, default=protocol.HVP_ITERS, help="the forward's iterations before an HVP")
    ap.add_argument("--max-iters", type=int, default=2000)
    ap.add_argument("--eps", type=float, default=protocol.EPS,
                    help="ε (the authors' protocol: 0.1; the report labels other values, e.g. 'converge (ε = 1)')")
    ap.add_argument("--tol", type=float, default=protocol.TOL)
    ap.add_argument("--scaling", type=float, default=protocol.SCALING)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--data-dir", default=os.environ.get("FS_SUITE_DATA", "/tmp/fs_suite_data"))
    ap.add_argument("--no-eval", action="store_true", help="skip the marginal-error evaluation")
    ap.add_argument("--reach", action="store_true",
                    help="the largest n within the budget: one call per case, its time the row's (JIT and "
                         "autotuning included; no warm-up, no evaluation; protocol.py, 'Reach mode')")
    ap.add_argument("--skip-done", action="append", metavar="GLOB",
                    help="JSON-lines results (globs, repeatable): cases found there with a final status, and larger n "
                         "of a group that ended there (timeout, oom, crash), are not run again — for filling the grid")
    ap.add_argument("--keops-env", default=os.environ.get("SUITE_KEOPS_ENV"),
                    help="keops_doctor.py's --env-out file: its exports are given to geomloss-online's processes")
    ap.add_argument("--out", default=f"bench/results/suite_{protocol.now()[:10]}.jsonl")
    args = ap.parse_args()
    if args.stamp:
        header = {"suite": "flashsinkhorn-bench-suite", "schema": 1, "machine": protocol.machine(),
                  "commit": protocol.commit(), "date": protocol.now(), "command": args.stamp}
        for line in sys.stdin:
            if line.strip().startswith("{"):
                print(json.dumps({**json.loads(line), **header}), flush=True)
        return 0
    if args.group:
        run_group([Case.from_json(c) for c in json.loads(args.group)], args.not_after)
        return 0
    return sweep(args)


if __name__ == "__main__":
    sys.exit(main())
