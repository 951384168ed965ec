#!/usr/bin/env python3
"""Tries to make KeOps (GeomLoss's online backend) run on this machine, one configuration per process,
and records each attempt's exact outcome (issue 7: KeOps 2.3 crashed inside its NVRTC code generation
on CUDA 13). Configurations, in order, stopping at the first that passes:
  pykeops-2.3            as installed (/tmp/site)
  pykeops-2.3+cuda-env   CUDA_HOME / CUDA_PATH set to the toolkit of the nvcc on PATH, fresh cache
  pykeops-2.2.3          the fallback wheels of .whl/alt, installed into /tmp/site_keops223 (first on
                         PYTHONPATH), fresh cache
The test: pykeops.test_torch_bindings(), then a LazyTensor log-sum-exp on CUDA checked against torch.
Writes one JSON line per attempt (stdout or --out) and, for the first that passes, the shell exports
that select it (--env-out; run_device.sh sources them before the sweep).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

TEST = r"""
import torch, pykeops
print("pykeops", pykeops.__version__, flush=True)
pykeops.test_torch_bindings()
from pykeops.torch import LazyTensor
x = torch.randn(2000, 8, device="cuda"); y = torch.randn(3000, 8, device="cuda")
lse = (-LazyTensor(x[:, None, :]).sqdist(LazyTensor(y[None, :, :]))).logsumexp(dim=1).view(-1)
ref = torch.logsumexp(-torch.cdist(x, y) ** 2, dim=1)
err = float((lse - ref).abs().max())
print("max abs error", err, flush=True)
assert err < 1e-3, err
"""


def attempt(name: str, env: dict, timeout: float) -> dict:
    try:
        # -X faulthandler: a crash inside KeOps's compiled binder prints the Python stack that reached it
        proc = subprocess.run([sys.executable, "-X", "faulthandler", "-c", TEST], capture_output=True, text=True,
                              env=env, timeout=timeout)
        ok = proc.returncode == 0
        return {"config": name, "status": "ok" if ok else ("crash" if proc.returncode < 0 else "error"),
                "returncode": proc.returncode, "stdout_tail": proc.stdout[-1500:], "stderr_tail": proc.stderr[-4000:]}
    except subprocess.TimeoutExpired as expired:
        return {"config": name, "status": "timeout", "error": f"not done in {timeout:g} s",
                "stderr_tail": (expired.stderr or b"")[-2000:].decode(errors="replace")
                if isinstance(expired.stderr, bytes) else str(expired.stderr)[-2000:]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=None)
    ap.add_argument("--env-out", default="/tmp/keops_choice.env")
    ap.add_argument("--timeout", type=float, default=240)
    ap.add_argument("--alt-wheels", default=str(Path(__file__).resolve().parents[2] / ".whl/alt"))
    args = ap.parse_args()
    base = dict(os.environ)
    nvcc = shutil.which("nvcc")
    cuda_home = str(Path(nvcc).resolve().parents[1]) if nvcc else "/usr/local/cuda"
    configs = [("pykeops-2.3", {}, None),
               ("pykeops-2.3+cuda-env", {"CUDA_HOME": cuda_home, "CUDA_PATH": cuda_home}, None)]
    alt = sorted(Path(args.alt_wheels).glob("*.whl"))
    if alt:
        configs.append(("pykeops-2.2.3", {"CUDA_HOME": cuda_home, "CUDA_PATH": cuda_home}, "/tmp/site_keops223"))
    rows, chosen = [], None
    for name, extra, site in configs:
        env = dict(base, **extra)
        cache = tempfile.mkdtemp(prefix="keops_cache_")
        env["KEOPS_CACHE_FOLDER"] = cache  # read by keopscore 2.2+ (a fresh build folder per attempt)
        if site:
            install = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps",
                                      "--no-compile", "--upgrade", "--target", site, *map(str, alt)],
                                     capture_output=True, text=True)
            if install.returncode != 0:
                rows.append({"config": name, "status": "error", "error": "pip install: " + install.stderr[-1500:]})
                continue
            env["PYTHONPATH"] = site + os.pathsep + env.get("PYTHONPATH", "")
        row = attempt(name, env, args.timeout)
        row["env"] = {k: env[k] for k in ("CUDA_HOME", "CUDA_PATH", "KEOPS_CACHE_FOLDER", "PYTHONPATH") if k in env}
        rows.append(row)
        print(f"keops doctor: {name}: {row['status']}", file=sys.stderr, flush=True)
        if row["status"] == "ok":
            chosen = row
            break
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
