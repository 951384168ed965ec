"""The protocol every driver of the benchmark suite shares (issue 7; SPEC §5).

Problem: x, y ~ N(0, I_d) (n = m points), weights a, b = U[0,1) + 0.1 normalised, cost C = ‖x − y‖²
(s = 1), ε = 0.1. Data are generated once on the host with NumPy (seed 0, float64: x, then y, then a,
then b — the draw order of bench/cpu_forward_bench.py) and cached as .npy files, so every peer reads
the same arrays; each driver casts them to its working dtype.

Operations (`Case.op`):
  forward           `iters` (10) fixed iterations at fixed ε from zero potentials, the value returned
  forward_gradient  the forward, then ∇x of the value
  hvp               the forward with HVP_ITERS (50) iterations — issue 5's protocol: after 10 the plans
                    are far from converged (marginal error 0.6) and each library differentiates its
                    own unconverged object (product norms 1.8, 10 and 30 at 10,000 × 64) — then one
                    Hessian-vector product ∇²_x(value)·A, A ~ N(0, I) (seed 1)
  converge          ε-scaling (ratio `scaling`) down to ε, then iterations until the peer's own
                    marginal-error test reaches `tol` (1e-4) or `max_iters`

Measurements: a warm-up call (compilation, autotuning: its time is `first_call_ms`), then `repeats`
timed calls, median `ms` (CUDA events for torch peers, wall clock after block_until_ready for JAX,
wall clock of synchronous calls otherwise — `timer` says which). Peak device memory from the
framework's allocator where it has one (`peak_device_bytes_source` says which); the parent adds the
peak of nvidia-smi's memory.used minus the value before the case (`peak_device_bytes_smi`, the whole
device, CUDA context included). Marginal error: the same evaluator for every peer, from its potentials
mapped to the convention P_ij = a_i b_j exp((f_i + g_j − C_ij)/ε) (`marginal_errors`).

Reach mode (`Case.reach`, run.py --reach): the issue's "largest n each implementation reaches within
10 minutes" asks about the one call a user makes, so each case makes exactly that call — JIT
compilation and autotuning included, the process's imports and the data's loading not — and `ms` is
its time. Those rows answer the reach question only: the report keeps them out of the timing tables.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import math
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path

SEED = 0
EPS = 0.1
ITERS = 10
HVP_ITERS = 50
TOL = 1e-4
SCALING = 0.5
RESULT_MARKER = "SUITE_RESULT "
# Printed by the case's process after its first call (imports, JIT, autotuning done) with that call's
# ms: the parent tells a timeout in the first call from one in the timed calls (run.py).
FIRST_CALL_MARKER = "SUITE_FIRST_CALL "
# Exact marginal errors up to this many (i, j) pairs; beyond, an unbiased estimate from sampled rows
# and columns (each sampled row's error is exact: it sums over every column).
EXACT_PAIRS = 4e8
SAMPLED_LINES = 2048


class Unsupported(Exception):
    """The peer has no such operation or mode (recorded as status 'unsupported', with the reason)."""


@dataclasses.dataclass
class Case:
    impl: str
    op: str
    n: int
    d: int
    precision: str = "tf32"
    device: str = "cuda"
    eps: float = EPS
    iters: int = ITERS
    tol: float = TOL
    scaling: float = SCALING
    max_iters: int = 2000
    warmup: int = 1
    repeats: int = 5
    threads: int = 0
    data_dir: str = "/tmp/fs_suite_data"
    evaluate: bool = True
    reach: bool = False  # one call per case, its time the record's (module docstring, "Reach mode")

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self))

    @staticmethod
    def from_json(text: str) -> "Case":
        return Case(**json.loads(text))


# ----------------------------------------------------------------------------- data
def data_paths(data_dir: str, n: int, d: int) -> dict[str, Path]:
    base = Path(data_dir) / f"n{n}_d{d}_seed{SEED}"
    return {name: base / f"{name}.npy" for name in ("x", "y", "a", "b")}


def make_data(n: int, d: int):
    """x, y ~ N(0, I_d), weights U[0,1) + 0.1 normalised; float64, seed SEED, n = m."""
    import numpy as np

    rng = np.random.default_rng(SEED)
    x = rng.standard_normal((n, d))
    y = rng.standard_normal((n, d))
    a = rng.random(n) + 0.1
    b = rng.random(n) + 0.1
    return x, y, a / a.sum(), b / b.sum()


def ensure_data(data_dir: str, n: int, d: int, dtype: str = "float32") -> dict[str, Path]:
    """Writes the arrays once (float32 points, float64 weights; `dtype` float64 adds x64/y64)."""
    import numpy as np

    paths = data_paths(data_dir, n, d)
    if dtype == "float64":
        paths["x"], paths["y"] = paths["x"].with_name("x64.npy"), paths["y"].with_name("y64.npy")
    if all(p.exists() for p in paths.values()):
        return paths
    paths["x"].parent.mkdir(parents=True, exist_ok=True)
    x, y, a, b = make_data(n, d)
    # Written under a name of this process, then renamed: sweeps running side by side (run_lanes.sh)
    # may write the same arrays; each rename is atomic and the arrays are the same.
    for name, arr in (("x", x.astype(dtype)), ("y", y.astype(dtype)), ("a", a), ("b", b)):
        if not paths[name].exists():
            tmp = paths[name].with_suffix(f".{os.getpid()}.tmp.npy")
            np.save(tmp, arr)
            os.replace(tmp, paths[name])
    return paths


def load_data(case: Case, dtype: str = "float32"):
    """(x, y, a, b) as NumPy arrays: points in `dtype`, weights float64 (cast by the driver)."""
    import numpy as np

    paths = ensure_data(case.data_dir, case.n, case.d, "float64" if dtype == "float64" else "float32")
    x, y = np.load(paths["x"]), np.load(paths["y"])
    if x.dtype != np.dtype(dtype):
        x, y = x.astype(dtype), y.astype(dtype)
    return x, y, np.load(paths["a"]), np.load(paths["b"])


def hvp_direction(n: int, d: int):
    import numpy as np

    return np.random.default_rng(SEED + 1).standard_normal((n, d)).astype(np.float32)


def torch_dtype(precision: str):
    import torch

    return torch.float64 if precision == "fp64" else torch.float32


def set_torch_tf32(precision: str) -> None:
    import torch

    allow = precision in ("tf32", "bf16")
    torch.backends.cuda.matmul.allow_tf32 = allow
    torch.backends.cudnn.allow_tf32 = allow


# ----------------------------------------------------------------------------- timing
def median(values: list[float]) -> float:
    s = sorted(values)
    return s[len(s) // 2] if len(s) % 2 else 0.5 * (s[len(s) // 2 - 1] + s[len(s) // 2])


def first_call_done(first_ms: float) -> None:
    print(f"{FIRST_CALL_MARKER}{first_ms:.1f}", flush=True)


REACH_TIMER = "the first and only call, wall clock (reach mode: JIT and autotuning included)"


def reach_record(first_ms: float, timer: str = REACH_TIMER) -> dict:
    """The timing fields of a reach-mode case: its one call (`timer` says what was timed)."""
    return {"ms": first_ms, "ms_min": first_ms, "ms_all": [first_ms], "first_call_ms": first_ms, "repeats": 1,
            "timer": timer, "reach": True}


class LibraryMemory:
    """A library's own device-memory peak beside torch's allocator: reset() before the timed calls,
    peak() after (bytes), `source` naming the counter."""

    def __init__(self, reset, peak, source: str) -> None:
        self.reset, self.peak, self.source = reset, peak, source


def time_torch(call, case: Case, library_memory: LibraryMemory | None = None) -> dict:
    """Warm-up, then `repeats` calls timed with CUDA events (CPU: wall clock); peak allocator bytes:
    torch's, plus `library_memory`'s for a library that allocates its device buffers itself. In reach
    mode the first call alone (reach_record)."""
    import torch

    cuda = case.device.startswith("cuda")

    def reset_peaks():
        if cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            if library_memory is not None:
                library_memory.reset()
    if case.reach:
        reset_peaks()
    t0 = time.perf_counter()
    out = call()
    if cuda:
        torch.cuda.synchronize()
    first_ms = (time.perf_counter() - t0) * 1e3
    first_call_done(first_ms)
    if case.reach:
        return {**reach_record(first_ms), **_peaks(cuda, library_memory)}, out
    for _ in range(max(case.warmup - 1, 0)):
        out = call()
    repeats, warm_ms, out = sized_repeats(case, call, torch.cuda.synchronize if cuda else lambda: None)
    times = []
    reset_peaks()
    for _ in range(repeats):
        if cuda:
            start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            out = call()
            stop.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(stop))
        else:
            t0 = time.perf_counter()
            out = call()
            times.append((time.perf_counter() - t0) * 1e3)
    record = {"ms": median(times), "ms_min": min(times), "ms_all": times, "first_call_ms": first_ms,
              "warm_call_ms": warm_ms, "repeats": repeats, "timer": "cuda events" if cuda else "wall clock"}
    return {**record, **_peaks(cuda, library_memory)}, out


def _peaks(cuda: bool, library_memory: LibraryMemory | None) -> dict:
    """The peak-memory fields since the last reset: the allocators' on CUDA, the host's otherwise."""
    import torch

    record = {}
    if cuda:
        record["peak_device_bytes"] = int(torch.cuda.max_memory_allocated())
        record["peak_device_bytes_source"] = "torch.cuda.max_memory_allocated (timed calls; inputs included)"
        if library_memory is not None:
            # The two peaks may come at different moments: their sum bounds the joint peak from above.
            record["peak_torch_tensor_bytes"] = record["peak_device_bytes"]
            record["peak_library_bytes"] = int(library_memory.peak())
            record["peak_device_bytes"] += record["peak_library_bytes"]
            record["peak_device_bytes_source"] = (f"torch.cuda.max_memory_allocated + {library_memory.source} "
                                                  "(timed calls; inputs included; a sum of two peaks)")
    else:
        record.update(host_memory())
    return record


def time_torch_forward_gradient(value_of, x, case: Case, library_memory: LibraryMemory | None = None) -> dict:
    """time_torch of value_of(x) and its gradient w.r.t. x (one torch.autograd.grad, x requires grad);
    the timing fields, then value_reported and gradient_norm (‖∇_x value‖₂)."""
    import torch

    def call():
        value = value_of(x)
        (grad,) = torch.autograd.grad(value, x)
        return value, grad
    timing, (value, grad) = time_torch(call, case, library_memory)
    return {**timing, "value_reported": float(value), "gradient_norm": float(grad.norm())}


def time_wall(call, case: Case, sync=lambda out: out) -> dict:
    """Warm-up, then `repeats` calls timed by the wall clock, each ended by `sync(out)`; in reach mode
    the first call alone (reach_record)."""
    t0 = time.perf_counter()
    out = sync(call())
    first_ms = (time.perf_counter() - t0) * 1e3
    first_call_done(first_ms)
    if case.reach:
        return reach_record(first_ms), out
    for _ in range(max(case.warmup - 1, 0)):
        out = sync(call())
    repeats, warm_ms, out = sized_repeats(case, lambda: sync(call()))
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = sync(call())
        times.append((time.perf_counter() - t0) * 1e3)
    return {"ms": median(times), "ms_min": min(times), "ms_all": times, "first_call_ms": first_ms,
            "warm_call_ms": warm_ms, "repeats": repeats, "timer": "wall clock (synchronised)"}, out


def sized_repeats(case: Case, call, wait=lambda: None) -> tuple[int, float, object]:
    """One warm call, `wait()` after it (the device's queue drained), that sizes the timed repeats:
    (adaptive_repeats, its ms, its output)."""
    t0 = time.perf_counter()
    out = call()
    wait()
    warm_ms = (time.perf_counter() - t0) * 1e3
    return adaptive_repeats(case, warm_ms), warm_ms, out


def adaptive_repeats(case: Case, warm_ms: float) -> int:
    """Fewer repeats for slow calls: at most ~60 s of timed calls, sized by a warm call's time (an
    untimed call after the warm-up). Sized by the first call until session 35, a peer whose first call
    autotunes (flash-sinkhorn: 7–24 s at n = 10⁴) got one or two repeats of a 3 ms call, and those
    samples read up to 2× slow (suite_h100_2026-12-05_s34a.jsonl against _s35a)."""
    return max(1, min(case.repeats, int(60e3 / max(warm_ms, 1e-3))))


def host_memory() -> dict:
    import resource

    return {"peak_host_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
            "peak_host_rss_source": "ru_maxrss of the case's process (interpreter and data included)"}


# ----------------------------------------------------------------------------- marginal error
def marginal_errors(x, y, a, b, f, g, eps: float, device: str = "cuda") -> dict:
    """‖P1 − a‖₁ and ‖Pᵀ1 − b‖₁ for P_ij = a_i b_j exp((f_i + g_j − ‖x_i − y_j‖²)/ε), float64.

    Every peer's potentials are mapped to this convention first. Exact when n·m ≤ EXACT_PAIRS, else
    the L1 sums are estimated from SAMPLED_LINES uniformly sampled rows (and columns), each summed over
    all columns (rows): unbiased, and the method is recorded.
    """
    import numpy as np
    import torch

    dev = torch.device(device if (device.startswith("cuda") and torch.cuda.is_available()) else "cpu")
    as64 = lambda v: torch.as_tensor(np.asarray(v, dtype=np.float64), device=dev)  # noqa: E731
    n, m = len(a), len(b)
    exact = n * m <= EXACT_PAIRS
    rows = None if exact else np.sort(np.random.default_rng(SEED + 2).choice(n, min(SAMPLED_LINES, n), replace=False))
    cols = None if exact else np.sort(np.random.default_rng(SEED + 3).choice(m, min(SAMPLED_LINES, m), replace=False))

    def side(xs, ys, ws, wt, fs, gt, pick):
        # error_i = w_i · |exp(f_i/ε + LSE_j[(g_j − C_ij)/ε + log w'_j]) − 1|
        idx = np.arange(len(ws)) if pick is None else pick
        ys_t, gt_t, lwt = as64(ys), as64(gt), torch.log(as64(wt))
        yy = (ys_t * ys_t).sum(1)
        total = 0.0
        chunk = max(1, int(2e8 // max(len(wt), 1)))
        for start in range(0, len(idx), chunk):
            sel = idx[start:start + chunk]
            xs_t = as64(xs[sel])
            cost = (xs_t * xs_t).sum(1)[:, None] + yy[None, :] - 2.0 * xs_t @ ys_t.T
            lse = torch.logsumexp((gt_t[None, :] - cost) / eps + lwt[None, :], dim=1)
            ratio = torch.exp(as64(fs[sel]) / eps + lse)
            total += float((as64(ws[sel]) * (ratio - 1.0).abs()).sum())
        return total * (len(ws) / len(idx))

    if not (np.all(np.isfinite(f)) and np.all(np.isfinite(g))):
        return {"marginal_error": float("nan"), "marginal_error_method": "potentials not finite"}
    row = side(x, y, a, b, f, g, rows)
    col = side(y, x, b, a, g, f, cols)
    return {"marginal_error": max(row, col), "marginal_error_rows_l1": row, "marginal_error_cols_l1": col,
            "marginal_error_method": "exact (float64)" if exact
            else f"estimated from {SAMPLED_LINES} sampled rows and columns (float64)"}


def dual_value(a, b, f, g) -> float:
    import numpy as np

    return float(np.dot(np.asarray(a, np.float64), np.asarray(f, np.float64))
                 + np.dot(np.asarray(b, np.float64), np.asarray(g, np.float64)))


# ----------------------------------------------------------------------------- provenance
def versions(modules=("numpy", "torch", "triton", "jax", "jaxlib", "flash_sinkhorn", "geomloss", "pykeops",
                      "keopscore", "ott", "ot", "flashsinkhorn")) -> dict:
    out = {"python": platform.python_version()}
    for name in modules:
        if name in sys.modules or name in ("numpy", "torch"):
            try:
                out[name] = __import__(name).__version__
            except Exception:  # noqa: BLE001 — what is missing is simply not listed
                pass
    return out


def machine() -> dict:
    info = {"host": os.environ.get("FS_MACHINE", platform.node()), "platform": platform.platform(),
            "cpus": os.cpu_count()}
    # the kernel choices our library reads from the environment (FLASHSINKHORN_KERNEL, _FP32_DOTS,
    # _POINT_GRADIENT ...): a row measured under one says so
    chosen = {k: v for k, v in sorted(os.environ.items()) if k.startswith("FLASHSINKHORN_") and k != "FLASHSINKHORN_BIN"}
    if chosen:
        info["flashsinkhorn_env"] = chosen
    try:
        smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total",
                              "--format=csv,noheader"], capture_output=True, text=True, timeout=20)
        if smi.returncode == 0:
            info["gpu"] = "; ".join(line.strip() for line in smi.stdout.splitlines() if line.strip())  # one per GPU
    except (OSError, subprocess.TimeoutExpired):
        pass
    info.update(cpu_identity())
    return info


def cpu_identity() -> dict:
    """The CPU as lscpu names it: model name, family/model and the widest SIMD the kernels (built with
    -march=native) may use. The development VMs move between hosts under the same model name
    ("AMD EPYC": Zen 1 on 2026-12-02, Zen 4 with AVX-512 on 2026-12-06), so CPU rows carry all three."""
    info = {}
    try:
        lscpu = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.TimeoutExpired):
        return info
    m = re.search(r"^Model name:\s+(.*)$", lscpu, re.M)
    if m:
        info["cpu_model"] = m.group(1).strip()
    family, model = re.search(r"^CPU family:\s+(\S+)", lscpu, re.M), re.search(r"^Model:\s+(\S+)", lscpu, re.M)
    if family and model:
        info["cpu_family_model"] = f"{family.group(1)}/{model.group(1)}"
    flags = re.search(r"^Flags:\s+(.*)$", lscpu, re.M)
    if flags:
        present = set(flags.group(1).split())
        info["cpu_simd"] = next((f for f in ("avx512f", "avx2", "avx", "sse4_2") if f in present), "none")
    return info


def commit() -> str:
    if os.environ.get("FS_COMMIT"):
        return os.environ["FS_COMMIT"]
    try:
        out = subprocess.run(["git", "-C", str(Path(__file__).parent), "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, timeout=20)
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"


def now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def finite(value) -> bool:
    try:
        return math.isfinite(float(value))
    except (TypeError, ValueError):
        return False
