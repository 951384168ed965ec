"""bench/studies/tf32_cost_forms.py and the roundings it shares (bench/studies/operand_rounding.py):
the roundings against hand-computed values, and the study's math fact — the squared distance of
rounded points carries about twice the cost error of fp32 norms with a rounded product."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

STUDIES = Path(__file__).resolve().parents[2] / "bench" / "studies"
sys.path.insert(0, str(STUDIES))

from operand_rounding import bf16, tf32, tf32_truncated  # noqa: E402


def test_roundings_keep_the_top_mantissa_bits_nearest_even_or_truncated():
    ulp = 2.0 ** -10  # tf32's ulp at 1
    assert tf32(1 + ulp / 2) == 1.0  # a tie goes to the even neighbour
    assert tf32(1 + 3 * ulp / 2) == 1 + 2 * ulp  # a tie from an odd neighbour goes up
    assert tf32(1 + 0.6 * ulp) == 1 + ulp
    assert tf32_truncated(1 + 0.9 * ulp) == 1.0
    assert tf32_truncated(-(1 + 0.9 * ulp)) == -1.0  # toward zero
    assert bf16(1 + 2.0 ** -8) == 1.0 and bf16(1 + 3 * 2.0 ** -8) == 1 + 2.0 ** -6
    values = np.random.default_rng(3).standard_normal(10000).astype(np.float32)
    assert np.all(np.abs(tf32(values) - values) <= np.abs(values) * 2.0 ** -11)


def test_the_rounded_points_squared_distance_has_twice_the_error(tmp_path):
    out = tmp_path / "forms.jsonl"
    subprocess.run([sys.executable, str(STUDIES / "tf32_cost_forms.py"), "--n", "120", "--ds", "64",
                    "--iterations", "20", "--out", str(out)], check=True, capture_output=True, text=True, timeout=300)
    rows = {(r["rounding"], r["form"]): r for r in map(json.loads, out.read_text().splitlines())}
    assert len(rows) == 4
    ratio = rows[("nearest", "ours")]["cost_error_std"] / rows[("nearest", "mixed")]["cost_error_std"]
    assert 1.7 < ratio < 2.3  # √(8σ² / 2σ²) = 2
    # truncation errs more than nearest-even in either form
    for form in ("ours", "mixed"):
        assert rows[("truncated", form)]["cost_error_std"] > rows[("nearest", form)]["cost_error_std"]
