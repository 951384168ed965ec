#!/usr/bin/env python3
"""Benchmark suite driver (issue 7): every (operation, d, n, implementation, precision) case in its own
process with a time limit, so that an out-of-memory error, a crash or a hang is recorded (with the exact
error text) and the sweep goes on. Protocol: protocol.py.

Stop rule: per (implementation, operation, d, precision), once a case fails (timeout, oom, error,
crash), the larger n are recorded as 'skipped' and not run: the largest n that succeeded is the one the
peer reaches within the per-case budget. Cases run in the order (operation, d, n, implementation), so a
sweep cut short by --deadline has run every implementation up to about the same n.

    python3 bench/suite/run.py --impls flashsinkhorn-cli,flash-sinkhorn,geomloss-tensorized \
        --ops forward,converge --ns 1000,10000 --ds 3,64 --precisions tf32 --budget 600 \
        --out bench/results/suite_<date>.jsonl
Output: one JSON object per case (appended), with machine, commit (FS_COMMIT), date and versions.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
import os
import subprocess
import sys
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
    "flash-sinkhorn": ("drv_flash_sinkhorn", {"fp32", "tf32", "bf16"}, False),
    "geomloss-tensorized": ("drv_geomloss", {"fp32", "tf32", "fp64"}, True),
    "geomloss-online": ("drv_geomloss", {"fp32", "fp64"}, False),
    "ott-dense": ("drv_ott", {"fp32", "tf32", "fp64"}, True),
    "ott-online": ("drv_ott", {"fp32", "tf32", "fp64"}, False),
    "pot-dense-log": ("drv_pot", {"fp32", "tf32", "fp64"}, True),
    "pot-lazy": ("drv_pot", {"fp32", "tf32", "fp64"}, False),
}
OPS = ("forward", "forward_gradient", "hvp", "converge")
FAILED = ("timeout", "oom", "error", "crash")


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


# ----------------------------------------------------------------------------- sweep (parent side)
class SmiSampler:
    """Peak of nvidia-smi's memory.used (whole device) while a case runs, minus the value before it."""

    def __init__(self, enabled: bool):
        self.peak = self.baseline = None
        self.proc = None
        if not enabled:
            return
        try:
            self.proc = subprocess.Popen(["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits",
                                          "-i", "0", "-lms", "100"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                         text=True)
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

    def stop(self) -> dict:
        if self.proc is None:
            return {}
        self.proc.terminate()
        self.proc.wait()
        if self.peak is None or self.baseline is None:
            return {}
        return {"peak_device_bytes_smi": self.peak - self.baseline, "device_bytes_before_smi": self.baseline}


def launch(case: Case, budget: float) -> dict:
    env = dict(os.environ, PYTHONUNBUFFERED="1", XLA_PYTHON_CLIENT_PREALLOCATE="false")
    if case.threads:
        env.update(OMP_NUM_THREADS=str(case.threads), MKL_NUM_THREADS=str(case.threads),
                   OPENBLAS_NUM_THREADS=str(case.threads),
                   XLA_FLAGS=f"--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads={case.threads}")
    sampler = SmiSampler(case.device.startswith("cuda"))
    t0 = time.perf_counter()
    try:
        proc = subprocess.run([sys.executable, __file__, "--case", case.to_json()], capture_output=True, text=True,
                              timeout=budget, env=env)
    except subprocess.TimeoutExpired as expired:
        tail = (expired.stderr or b"")
        tail = tail.decode(errors="replace") if isinstance(tail, bytes) else tail
        return {"status": "timeout", "error": f"not done within the {budget:g} s budget", "stderr_tail": tail[-1500:],
                "wall_s": time.perf_counter() - t0, **sampler.stop()}
    wall = time.perf_counter() - t0
    memory = sampler.stop()
    lines = [line for line in proc.stdout.splitlines() if line.startswith(protocol.RESULT_MARKER)]
    if lines:
        record = json.loads(lines[-1][len(protocol.RESULT_MARKER):])
    else:
        status = "oom" if oom_text(proc.stderr) else "crash"
        record = {"status": status, "error": f"exit status {proc.returncode}" + (
            f" (signal {-proc.returncode})" if proc.returncode < 0 else ""), "stderr_tail": proc.stderr[-4000:]}
    if record["status"] in FAILED and "stderr_tail" not in record:
        record["stderr_tail"] = proc.stderr[-1500:]
    record["wall_s"] = wall
    record.update(memory)
    return record


def sweep(args) -> int:
    impls = [i for i in args.impls.split(",") if i]
    for impl in impls:
        if impl not in IMPLS:
            sys.exit(f"unknown implementation {impl!r}; known: {', '.join(IMPLS)}")
    ops = [o for o in args.ops.split(",") if o]
    ns = sorted(int(float(v)) for v in args.ns.split(","))
    ds = [int(v) for v in args.ds.split(",")]
    precisions = [p for p in args.precisions.split(",") if p]
    header = {"suite": "flashsinkhorn-bench-suite", "schema": 1, "machine": protocol.machine(),
              "commit": protocol.commit(), "command": " ".join(sys.argv)}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    failed_at: dict[tuple, str] = {}
    start = time.time()
    with out.open("a") as sink:
        for op in ops:
            for d in ds:
                for n in ns:
                    for impl in impls:
                        for precision in precisions:
                            if precision not in IMPLS[impl][1]:
                                continue
                            key = (impl, op, d, precision)
                            case = Case(impl=impl, op=op, n=n, d=d, precision=precision, device=args.device,
                                        warmup=args.warmup, repeats=args.repeats, threads=args.threads,
                                        data_dir=args.data_dir, max_iters=args.max_iters, tol=args.tol,
                                        scaling=args.scaling, iters=args.iters, evaluate=not args.no_eval)
                            row = {**header, **dataclasses.asdict(case), "date": protocol.now()}
                            if key in failed_at:
                                row.update(status="skipped", reason=failed_at[key])
                            elif time.time() - start > args.deadline:
                                row.update(status="not_run", reason=f"the sweep's {args.deadline:g} s deadline passed")
                            else:
                                protocol.ensure_data(args.data_dir, n, d, "float64" if precision == "fp64" else "float32")
                                row.update(launch(case, args.budget))
                                if row["status"] in FAILED:
                                    failed_at[key] = f"n = {n} ended with status {row['status']}"
                            sink.write(json.dumps(row) + "\n")
                            sink.flush()
                            summary = row.get("ms", row.get("error", row.get("reason", "")))
                            print(f"{op:<16} d={d:<5} n={n:<8} {impl:<20} {precision:<5} {row['status']:<11} "
                                  f"{str(summary)[:110]}", file=sys.stderr, flush=True)
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--case", help=argparse.SUPPRESS)
    ap.add_argument("--stamp", metavar="COMMAND",
                    help="copy JSON lines from stdin to stdout with machine, commit, date and COMMAND added")
    ap.add_argument("--impls", default="flashsinkhorn-cli,flash-sinkhorn,geomloss-tensorized,geomloss-online,"
                                       "ott-dense,ott-online,pot-dense-log,pot-lazy")
    ap.add_argument("--ops", default="forward,forward_gradient,hvp,converge")
    ap.add_argument("--ns", default="1000,10000,50000,200000,1000000")
    ap.add_argument("--ds", default="3,8,64,512,1024")
    ap.add_argument("--precisions", default="tf32")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--budget", type=float, default=600, help="seconds per case (the stop rule's limit)")
    ap.add_argument("--deadline", type=float, default=float("inf"), help="seconds after which no case starts")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--iters", type=int, default=protocol.ITERS)
    ap.add_argument("--max-iters", type=int, default=2000)
    ap.add_argument("--tol", type=float, default=protocol.TOL)
    ap.add_argument("--scaling", type=float, default=protocol.SCALING)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--data-dir", default=os.environ.get("FS_SUITE_DATA", "/tmp/fs_suite_data"))
    ap.add_argument("--no-eval", action="store_true", help="skip the marginal-error evaluation")
    ap.add_argument("--out", default=f"bench/results/suite_{protocol.now()[:10]}.jsonl")
    args = ap.parse_args()
    if args.stamp:
        header = {"suite": "flashsinkhorn-bench-suite", "schema": 1, "machine": protocol.machine(),
                  "commit": protocol.commit(), "date": protocol.now(), "command": args.stamp}
        for line in sys.stdin:
            if line.strip().startswith("{"):
                print(json.dumps({**json.loads(line), **header}), flush=True)
        return 0
    if args.case:
        case = Case.from_json(args.case)
        if case.threads:
            try:
                import torch

                torch.set_num_threads(case.threads)
            except ImportError:
                pass
        print(protocol.RESULT_MARKER + json.dumps(run_case(case)), flush=True)
        return 0
    return sweep(args)


if __name__ == "__main__":
    sys.exit(main())
