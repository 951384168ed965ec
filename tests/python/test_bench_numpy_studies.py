"""bench/studies scripts that need only NumPy and SciPy, run small: they must not rot, and what they
show must hold at a small size too. (test_bench_studies.py holds those that need torch.)"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("scipy")

STUDIES = Path(__file__).resolve().parents[2] / "bench" / "studies"


def test_ex2_weights_leave_the_hvp_cg_as_it_was():
    """FLASHSINKHORN_FP32_PASS_EXP=ex2 emulated (bench/studies/ex2_weights_cg.py): weights ~1e-7 off,
    rows and columns rounded apart, and the CG takes the iterations (within 5%: at 300 points and d = 8
    its ~180 iterations on a near-permutation plan drift by 4) to the distance from the exact solution
    (within 20%) that it takes with float64 weights, at both tolerances."""
    text = subprocess.run([sys.executable, str(STUDIES / "ex2_weights_cg.py"), "--n", "300", "--ds", "3,8"],
                          check=True, capture_output=True, text=True, timeout=300, cwd=STUDIES).stdout
    errors = [float(v) for v in re.findall(r"relative error against float64 ([0-9.e+-]+) \(median\)", text)]
    assert len(errors) == 2 and all(1e-9 < e < 4e-7 for e in errors), text
    runs = re.findall(r"tol (\S+) (float64|ex2)\s+CG iterations\s+(\d+), \|x − x\*\|/\|x\*\| (\S+)", text)
    assert len(runs) == 8, text
    for float64, ex2 in zip(runs[0::2], runs[1::2]):
        assert (float64[0], float64[1], ex2[1]) == (ex2[0], "float64", "ex2")
        assert abs(int(ex2[2]) - int(float64[2])) <= max(1, 0.05 * int(float64[2])), text
        assert float(ex2[3]) <= 1.2 * float(float64[3]), text
