"""docs/environment.md names every FLASHSINKHORN_* variable the library reads at run time (C++ getenv,
Python os.environ), and nothing else; a bad value is an error that names the variable."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "environment.md"
READS = (re.compile(r'getenv\("(FLASHSINKHORN_[A-Z0-9_]+)"\)'),
         re.compile(r'environ(?:\.get\(|\[)"(FLASHSINKHORN_[A-Z0-9_]+)"'))


def variables_read() -> set[str]:
    sources = [p for p in (REPO / "src").rglob("*") if p.suffix in {".cpp", ".hpp", ".cu", ".cuh"}]
    sources += list((REPO / "python" / "flashsinkhorn").glob("*.py"))
    return {name for path in sources for pattern in READS for name in pattern.findall(path.read_text())}


def variables_documented() -> set[str]:
    """The names in the first column of the page's tables."""
    return set(re.findall(r"^\| `(FLASHSINKHORN_[A-Z0-9_]+)` \|", DOC.read_text(), flags=re.MULTILINE))


def test_every_variable_read_is_documented_and_nothing_else():
    read = variables_read()
    assert len(read) >= 10, read  # the scan itself works
    assert read == variables_documented()


def test_a_bad_value_names_the_variable():
    """FLASHSINKHORN_CPU_DOT_CACHE_MIB is read by the first CPU solve on rows of 16 coordinates or more:
    a value that is not a whole number of MiB is InvalidArgument naming the variable and its range."""
    pytest.importorskip("flashsinkhorn._core")
    code = ("import numpy as np, flashsinkhorn as fs\n"
            "x = np.random.default_rng(0).standard_normal((40, 16))\n"
            "try:\n    fs.sinkhorn(x, x + 1, eps=0.5, iters=3, device='cpu')\n"
            "except fs.InvalidArgument as e:\n    print('refused:', e)\n")
    env = dict(os.environ, FLASHSINKHORN_CPU_DOT_CACHE_MIB="lots")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert "refused: FLASHSINKHORN_CPU_DOT_CACHE_MIB must be a whole number of MiB in [0, 65536]" in done.stdout, \
        done.stdout + done.stderr
