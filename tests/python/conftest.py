"""Fixtures for driving the `flashsinkhorn` CLI as a black box.

  FLASHSINKHORN_BIN     path of the binary (default: <repo>/build/apps/cli/flashsinkhorn)
  FLASHSINKHORN_DEVICE  --device passed to every solve (default: cpu)

Tests needing the binary skip when it does not exist, with the path in the reason.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(HERE))

DEFAULT_BIN = REPO / "build" / "apps" / "cli" / "flashsinkhorn"


def binary_path() -> Path:
    return Path(os.environ.get("FLASHSINKHORN_BIN", str(DEFAULT_BIN)))


def device() -> str:
    return os.environ.get("FLASHSINKHORN_DEVICE", "cpu")


@dataclass
class SolveOutput:
    """One CLI solve: the parsed JSON summary and the arrays written with --out."""

    summary: dict
    f: np.ndarray | None
    g: np.ndarray | None
    transport_x: np.ndarray | None
    command: str
    stderr: str

    def __getitem__(self, key):
        return self.summary[key]

    @property
    def cost(self) -> float:
        return float(self.summary["cost"])


class CliError(AssertionError):
    pass


def run_cli(args, timeout=600):
    """Runs the binary with `args`; returns the CompletedProcess (never raises on rc)."""
    cmd = [str(binary_path())] + [str(a) for a in args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def flag_args(flags: dict) -> list:
    """{'eps': 0.1, 'cost_scale': 0.5, 'debias': True} → ['--eps', '0.1', '--cost-scale', '0.5', '--debias']."""
    args = []
    for key, value in flags.items():
        if value is None or value is False:
            continue
        name = "--" + key.replace("_", "-")
        if value is True:
            args.append(name)
        elif isinstance(value, float):
            args += [name, repr(value)]  # repr: shortest string that round-trips the double
        else:
            args += [name, str(value)]
    return args


def make_solver(tmp_path: Path):
    counter = {"k": 0}

    def run_solve(x, y, a=None, b=None, *, input_dtype=np.float64, out=True, context="", **flags):
        """Writes x, y (and a, b) as .npy in tmp_path, runs `flashsinkhorn solve`, parses the JSON and
        loads f, g, transport_x. `context` (seed, sizes) is put in every failure message."""
        counter["k"] += 1
        work = tmp_path / f"solve{counter['k']}"
        work.mkdir()
        args = ["solve"]
        for name, arr in (("x", x), ("y", y), ("a", a), ("b", b)):
            if arr is None:
                continue
            path = work / f"{name}.npy"
            np.save(path, np.ascontiguousarray(np.asarray(arr, dtype=input_dtype)))
            args += [f"--{name}", str(path)]
        flags.setdefault("device", device())
        flags.setdefault("quiet", True)
        if device() == "cpu" and np.shape(x)[0] * np.shape(y)[0] < 200_000:
            # small problems on one thread: on a loaded machine each OpenMP barrier can wait for a
            # descheduled thread (seconds for a tiny solve); large ones keep the default threads.
            flags.setdefault("threads", 1)
        out_dir = work / "out" if out else None
        if out_dir is not None:
            flags["out"] = str(out_dir)
        args += flag_args(flags)
        proc = run_cli(args)
        command = " ".join(shlex.quote(str(c)) for c in [binary_path()] + args)
        if proc.returncode != 0:
            raise CliError(f"[{context}] CLI failed rc={proc.returncode}\n$ {command}\n"
                           f"stderr: {proc.stderr.strip()[-2000:]}\nstdout: {proc.stdout.strip()[-2000:]}")
        try:
            summary = json.loads(proc.stdout)
        except json.JSONDecodeError as exc:
            raise CliError(f"[{context}] stdout is not one JSON object ({exc})\n$ {command}\n"
                           f"stdout: {proc.stdout[-2000:]}") from exc

        def load(name):
            if out_dir is None:
                return None
            path = out_dir / f"{name}.npy"
            return np.load(path) if path.exists() else None

        return SolveOutput(summary, load("f"), load("g"), load("transport_x"), command, proc.stderr)

    return run_solve


@pytest.fixture(scope="session")
def cli_binary():
    path = binary_path()
    if not path.exists():
        pytest.skip(f"flashsinkhorn binary not found at {path} (set FLASHSINKHORN_BIN)")
    return path


@pytest.fixture(scope="session")
def otdd_data_dir(tmp_path_factory):
    """The MNIST / Fashion-MNIST training files (otdd_data.py): the real ones when present, else a
    synthetic stand-in of 300 images per set in the same format."""
    import otdd_data
    if otdd_data.real_data_available():
        return otdd_data.DATA
    return otdd_data.write_synthetic_idx_data(tmp_path_factory.mktemp("synthetic_idx"))


@pytest.fixture
def run_solve(cli_binary, tmp_path):
    return make_solver(tmp_path)


# ----------------------------------------------------------------------------- data
def random_problem(seed, n, m, d, weights=True, shift=0.3):
    """x ~ N(0, I_d), y ~ N(shift, I_d), weights U[0,1)+0.1 (unnormalised: the CLI normalises)."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d))
    y = rng.normal(size=(m, d)) + shift
    a = rng.random(n) + 0.1 if weights else None
    b = rng.random(m) + 0.1 if weights else None
    return x, y, a, b


def mean_cost(x, y, a, b, s):
    """E_{a⊗b}[C] — the data scale that ε is expressed relative to."""
    a = np.full(len(x), 1 / len(x)) if a is None else np.asarray(a) / np.sum(a)
    b = np.full(len(y), 1 / len(y)) if b is None else np.asarray(b) / np.sum(b)
    xx = np.sum(x * x, axis=1)
    yy = np.sum(y * y, axis=1)
    return float(s * (a @ xx + b @ yy - 2 * (a @ x) @ (b @ y)))


def rel_err(got, want):
    return abs(got - want) / max(abs(want), 1e-300)


def gauge_fix(f, g, a):
    """(f − c, g + c) with c = ⟨a, f⟩ (weights normalised): potentials are defined up to this shift."""
    a = np.asarray(a, dtype=np.float64) / np.sum(a)
    c = float(a @ f)
    return f - c, g + c
