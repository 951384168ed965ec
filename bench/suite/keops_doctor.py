#!/usr/bin/env python3
"""Tries to make KeOps (GeomLoss's online backend) run on this machine, one configuration per process,
and records each attempt's exact outcome (issue 7: KeOps 2.2.3 and 2.3 crashed with SIGSEGV on the GPU
machine from session 10 to 47). Configurations, in order, stopping at the first that passes:
  pykeops-2.3+compiler-libstdc++  the libstdc++ of the g++ on PATH preloaded (LD_PRELOAD), CUDA_HOME /
                         CUDA_PATH set to the toolkit of the nvcc on PATH, fresh cache. Passed on the
                         H100 machine in session 48, the first configuration to; the others crash
                         there. Their binders (built by the machine's CXX, /opt/gcc/bin/g++) link no
                         libstdc++ (ldd), and cuda-gdb put the crash in nvrtc_jit.so's own
                         std::ostringstream << int, before any NVRTC call: C++ runtime code inside the
                         binder running against no consistent runtime in the process.
  pykeops-2.3            as installed (/tmp/site)
  pykeops-2.3+cuda-env   CUDA_HOME / CUDA_PATH as above, fresh cache
  pykeops-2.3+nvrtc-V    where .whl_nvrtc/ holds an NVRTC of version V (tools/stage_peer_wheels.sh
                         --nvrtc V; 39 MB, carried apart): that NVRTC unpacked and preloaded ahead of
                         torch's and the toolkit's 13.0 (crashed too in session 48)
  pykeops-2.2.3          the fallback wheels of .whl/alt, installed into /tmp/site_keops223 (first on
                         PYTHONPATH), fresh cache
The test: pykeops.test_torch_bindings(), then a LazyTensor log-sum-exp on CUDA checked against torch.
Before KeOps compiles anything the test prints the CUDA and C++ runtime libraries the process has
mapped (torch's CUDA context made); after each attempt the libraries KeOps's compiled binders link to
(ldd) and their undefined CUDA symbols (nm -D) are recorded.
When none passes, one diagnostic attempt follows, never chosen for GeomLoss (which needs torch):
  pykeops-2.3-numpy      pykeops.numpy in a process that never imports torch (only the toolkit's
                         CUDA libraries): does the crash need torch's libraries in the process?
When the diagnostic crashes too, it runs once more under cuda-gdb (the GPU machine has no gdb;
cuda-gdb debugs host code too; a process without torch loads its symbols in seconds) and its native
backtrace is recorded: the Python stack (faulthandler) ends at KeOps's ctypes call into its compiled
binder, the frame that faults is below it.
Writes one JSON line per attempt (stdout or --out) and, for the first that passes, the shell exports
that select it (--env-out; run.py gives them to GeomLoss online's processes only).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

MAPPED = r"""
def mapped_cuda_libraries():
    names = set()
    for line in open("/proc/self/maps"):
        path = line.split()[-1]
        if any(k in path for k in ("nvrtc", "libcuda.so", "cudart", "nvJitLink", "libstdc++", "libgcc_s")):
            names.add(path)
    print("mapped:", *sorted(names), sep="\n  ", flush=True)
"""

TEST = MAPPED + r"""
import torch, pykeops
print("pykeops", pykeops.__version__, flush=True)
torch.zeros(1, device="cuda")  # torch's CUDA context (and the libraries it maps) first
mapped_cuda_libraries()
pykeops.test_torch_bindings()
from pykeops.torch import LazyTensor
x = torch.randn(2000, 8, device="cuda"); y = torch.randn(3000, 8, device="cuda")
lse = (-LazyTensor(x[:, None, :]).sqdist(LazyTensor(y[None, :, :]))).logsumexp(dim=1).view(-1)
ref = torch.logsumexp(-torch.cdist(x, y) ** 2, dim=1)
err = float((lse - ref).abs().max())
print("max abs error", err, flush=True)
assert err < 1e-3, err
"""


TEST_NUMPY = MAPPED + r"""
import sys
import numpy as np
import pykeops
from pykeops.numpy import LazyTensor
print("pykeops", pykeops.__version__, flush=True)
rng = np.random.default_rng(0)
x, y = rng.standard_normal((2000, 8)), rng.standard_normal((3000, 8))
lse = (-LazyTensor(x[:, None, :]).sqdist(LazyTensor(y[None, :, :]))).logsumexp(dim=1).reshape(-1)
mapped_cuda_libraries()
d2 = ((x[:, None, :] - y[None, :, :]) ** 2).sum(-1)
ref = -d2.min(1) + np.log(np.exp(-d2 + d2.min(1)[:, None]).sum(1))
err = float(np.abs(lse - ref).max())
print("max abs error", err, "torch imported:", "torch" in sys.modules, flush=True)
assert err < 1e-3 and "torch" not in sys.modules, err
"""


CUDA_LIBRARIES = ("nvrtc", "libcuda.so", "cudart", "nvJitLink")


def binder_report(cache: str) -> tuple[list[str], list[str]]:
    """What each shared object KeOps built in `cache` links to and needs: (the CUDA libraries ldd
    names — a line saying so where none — and its libstdc++; its undefined CUDA driver / NVRTC
    symbols (nm -D), which the process must provide when it links no CUDA library)."""
    links, symbols = [], []
    for so in sorted(Path(cache).rglob("*.so")):
        try:
            ldd = subprocess.run(["ldd", str(so)], capture_output=True, text=True, timeout=30).stdout
            nm = subprocess.run(["nm", "-D", "--undefined-only", str(so)], capture_output=True, text=True,
                                timeout=30).stdout
        except (OSError, subprocess.TimeoutExpired) as error:
            links.append(f"{so.name}: ldd / nm failed: {error}")
            continue
        cuda = [f"{so.name}: {line.strip()}" for line in ldd.splitlines() if any(k in line for k in CUDA_LIBRARIES)]
        links += cuda or [f"{so.name}: links no CUDA library"]
        links += [f"{so.name}: {line.strip()}" for line in ldd.splitlines() if "libstdc++" in line]
        names = sorted({line.split()[-1] for line in nm.splitlines()
                        if line.split() and line.split()[-1].startswith(("cu", "nvrtc"))})
        if names:
            symbols.append(f"{so.name}: {' '.join(names)}")
    return links, symbols


def native_backtrace(env: dict, test: str, timeout: float) -> dict:
    """`test` once more under cuda-gdb in batch mode (stop at the fault, print the native stack):
    the frames below KeOps's ctypes call, which faulthandler cannot show. {'frames': [...]} with
    gdb's '#k ...' lines, or {'error': ...} where cuda-gdb is missing, fails or runs out of time."""
    gdb = shutil.which("cuda-gdb") or shutil.which("cuda-gdb", path="/usr/local/cuda/bin")
    if gdb is None:
        return {"error": "cuda-gdb not found"}
    command = [gdb, "-q", "-batch", "-ex", "set pagination off", "-ex", "set confirm off",
               "-ex", "handle SIGPIPE nostop noprint", "-ex", "run", "-ex", "bt 40",
               "--args", sys.executable, "-c", test]
    try:
        proc = subprocess.run(command, capture_output=True, text=True, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"cuda-gdb not done in {timeout:g} s"}
    except OSError as error:
        return {"error": f"cuda-gdb: {error}"}
    text = proc.stdout + proc.stderr
    frames = [line.strip() for line in text.splitlines() if line.startswith("#")]
    signal = next((line.strip() for line in text.splitlines() if "received signal" in line), "")
    return {"signal": signal, "frames": frames} if frames else {"error": "no backtrace", "tail": text[-3000:]}


def unpacked_nvrtc(archive: Path, under: str = tempfile.gettempdir()) -> tuple[str, str]:
    """An NVRTC archive of tools/stage_peer_wheels.sh --nvrtc (nvidia_cuda_nvrtc-V.tar.xz: the
    wheel's nvidia/ tree) unpacked in a folder of `under`: (V, the folder of its libnvrtc)."""
    version = archive.name[len("nvidia_cuda_nvrtc-"):-len(".tar.xz")]
    root = Path(under) / f"keops_nvrtc_{version}"
    with tarfile.open(archive) as tar:
        tar.extractall(root, filter="data")
    lib = next(root.rglob("libnvrtc.so.*")).parent
    return version, str(lib)


def preload_first(library: str, base: dict) -> str:
    """LD_PRELOAD with `library` ahead of what `base` already preloads."""
    return " ".join(filter(None, (library, base.get("LD_PRELOAD"))))


def preloaded(lib: str, base: dict) -> dict:
    """The environment that makes every process load the libnvrtc of `lib` first (its builtins are
    found beside it): LD_PRELOAD for the library itself, LD_LIBRARY_PATH for what it opens."""
    return {"LD_PRELOAD": preload_first(str(next(Path(lib).glob("libnvrtc.so.*"))), base),
            "LD_LIBRARY_PATH": os.pathsep.join(filter(None, (lib, base.get("LD_LIBRARY_PATH"))))}


def compiler_runtime() -> str | None:
    """The libstdc++ of the g++ on PATH (g++ -print-file-name), resolved; None where it names no file.
    On the GPU machine that is the system's runtime, while KeOps builds its binders with $CXX
    (/opt/gcc/bin/g++ there)."""
    try:
        name = subprocess.run(["g++", "-print-file-name=libstdc++.so.6"], capture_output=True, text=True,
                              timeout=30).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return None
    return str(Path(name).resolve()) if os.path.isabs(name) and Path(name).exists() else None


def attempt(name: str, env: dict, timeout: float, test: str = TEST) -> dict:
    """`test` in a new process with `env`: its status ('ok', 'crash' by a signal, 'error',
    'timeout'), exit status and the tails of its output."""
    try:
        # -X faulthandler: a crash inside KeOps's compiled binder prints the Python stack that reached it
        proc = subprocess.run([sys.executable, "-X", "faulthandler", "-c", test], capture_output=True, text=True,
                              env=env, timeout=timeout)
        ok = proc.returncode == 0
        return {"config": name, "status": "ok" if ok else ("crash" if proc.returncode < 0 else "error"),
                "returncode": proc.returncode, "stdout_tail": proc.stdout[-1500:], "stderr_tail": proc.stderr[-4000:]}
    except subprocess.TimeoutExpired as expired:
        return {"config": name, "status": "timeout", "error": f"not done in {timeout:g} s",
                "stderr_tail": (expired.stderr or b"")[-2000:].decode(errors="replace")
                if isinstance(expired.stderr, bytes) else str(expired.stderr)[-2000:]}


def cuda_toolkit() -> dict:
    """CUDA_HOME and CUDA_PATH naming the toolkit of the nvcc on PATH (/usr/local/cuda without one)."""
    nvcc = shutil.which("nvcc")
    cuda_home = str(Path(nvcc).resolve().parents[1]) if nvcc else "/usr/local/cuda"
    return {"CUDA_HOME": cuda_home, "CUDA_PATH": cuda_home}


def configurations(base: dict, nvrtc_wheels: str, alt_wheels: str) -> list[tuple[str, dict, str | None]]:
    """The configurations to try, in order (the module's docstring): (name, environment added to
    `base`, the folder the alternative wheels install into or None)."""
    toolkit = cuda_toolkit()
    runtime = compiler_runtime()
    configs = [("pykeops-2.3+compiler-libstdc++", dict(toolkit, LD_PRELOAD=preload_first(runtime, base)), None)
               ] if runtime else []
    configs += [("pykeops-2.3", {}, None), ("pykeops-2.3+cuda-env", toolkit, None)]
    for archive in sorted(Path(nvrtc_wheels).glob("nvidia_cuda_nvrtc-*.tar.xz"))[-1:]:
        version, lib = unpacked_nvrtc(archive)
        configs.append((f"pykeops-2.3+nvrtc-{version}", dict(toolkit, **preloaded(lib, base)), None))
    if any(Path(alt_wheels).glob("*.whl")):
        configs.append(("pykeops-2.2.3", toolkit, "/tmp/site_keops223"))
    return configs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=None)
    ap.add_argument("--env-out", default="/tmp/keops_choice.env")
    ap.add_argument("--timeout", type=float, default=240)
    ap.add_argument("--alt-wheels", default=str(Path(__file__).resolve().parents[2] / ".whl/alt"))
    ap.add_argument("--nvrtc-wheels", default=str(Path(__file__).resolve().parents[2] / ".whl_nvrtc"))
    ap.add_argument("--configs", default="", help="comma-separated configuration names to try (default: all)")
    args = ap.parse_args()
    base = dict(os.environ)
    configs = configurations(base, args.nvrtc_wheels, args.alt_wheels)
    alt = sorted(Path(args.alt_wheels).glob("*.whl"))
    if args.configs:
        configs = [c for c in configs if c[0] in args.configs.split(",")]
    rows, chosen = [], None

    def record(row: dict, env: dict) -> None:
        row["binder_links"], row["binder_cuda_symbols"] = binder_report(env["KEOPS_CACHE_FOLDER"])
        rows.append(row)

    for name, extra, site in configs:
        env = dict(base, **extra)
        env["KEOPS_CACHE_FOLDER"] = tempfile.mkdtemp(prefix="keops_cache_")  # keopscore 2.2+: a fresh build folder
        if site:
            install = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps",
                                      "--no-compile", "--upgrade", "--target", site, *map(str, alt)],
                                     capture_output=True, text=True)
            if install.returncode != 0:
                rows.append({"config": name, "status": "error", "error": "pip install: " + install.stderr[-1500:]})
                continue
            env["PYTHONPATH"] = site + os.pathsep + env.get("PYTHONPATH", "")
        row = attempt(name, env, args.timeout)
        row["env"] = {k: env[k] for k in ("CUDA_HOME", "CUDA_PATH", "KEOPS_CACHE_FOLDER", "PYTHONPATH", "LD_PRELOAD",
                                          "LD_LIBRARY_PATH", "CXX") if k in env}
        record(row, env)
        print(f"keops doctor: {name}: {row['status']}", file=sys.stderr, flush=True)
        if row["status"] == "ok":
            chosen = row
            break
    if chosen is None:  # the diagnostic: KeOps with no torch in the process (never chosen)
        env = dict(base, **cuda_toolkit(), KEOPS_CACHE_FOLDER=tempfile.mkdtemp(prefix="keops_cache_"))
        row = attempt("pykeops-2.3-numpy", env, args.timeout, TEST_NUMPY)
        row["diagnostic"] = "pykeops.numpy without torch in the process; not usable by GeomLoss"
        if row["status"] == "crash":
            row["native_backtrace"] = native_backtrace(env, TEST_NUMPY, args.timeout)
        record(row, env)
        print(f"keops doctor: pykeops-2.3-numpy (diagnostic): {row['status']}", file=sys.stderr, flush=True)
    text = "".join(json.dumps(r) + "\n" for r in rows)
    if args.out:
        with open(args.out, "a") as sink:
            sink.write(text)
    else:
        sys.stdout.write(text)
    if chosen:
        Path(args.env_out).write_text("".join(f"export {k}={v!r}\n".replace("'", '"') for k, v in chosen["env"].items())
                                      + f"export SUITE_KEOPS_CONFIG={chosen['config']}\n")
    return 0 if chosen else 1


if __name__ == "__main__":
    sys.exit(main())
