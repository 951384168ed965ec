"""Dense float64 OTDD: S_ε = OT_ε(a, b) − ½OT_ε(a, a) − ½OT_ε(b, b) on C_ij = s(‖x_i − y_j‖² + W[l_i, l_j]).

The loop is the repository's float64 oracle, tests/python/dense_reference.py (GeomLoss's
`sinkhorn_loop`: softmin at diam², averaged symmetric updates f ← ½(f + T_f(g)), g ← ½(g + T_g(f))
along the ε-schedule, final extrapolation, debiased value ⟨a, f_ba − f_aa⟩ + ⟨b, g_ab − g_bb⟩),
imported here rather than copied. Only the three n×m cost matrices are this file's: formed once
in float64 from ‖x‖² + ‖y‖² − 2x·y on centred points (the n×m×d difference tensor the oracle's
own cost_matrix forms is 25 GB at n = 2,000, d = 784) plus the label term.

This file is named dense_otdd, not dense_reference, so that it never shadows the oracle module.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

_ORACLE_DIR = Path(__file__).resolve().parents[2] / "tests" / "python"
if str(_ORACLE_DIR) not in sys.path:
    sys.path.append(str(_ORACLE_DIR))
import dense_reference  # noqa: E402  (tests/python/dense_reference.py)


def label_cost_matrix(x: np.ndarray, lx: np.ndarray, y: np.ndarray, ly: np.ndarray, w: np.ndarray,
                      cost_scale: float) -> np.ndarray:
    """C_ij = s(‖x_i − y_j‖² + W[l_i, l_j]) in float64; x, y already centred by one common mean."""
    squared = (x * x).sum(1)[:, None] + (y * y).sum(1)[None, :] - 2.0 * (x @ y.T)
    return cost_scale * (np.maximum(squared, 0.0) + w[np.ix_(lx, ly)])


class LabelledDenseProblem(dense_reference.DenseProblem):
    """The oracle's DenseProblem on the label-augmented cost, uniform weights, float64, with the
    ε-schedule started at a given diameter (the one every implementation of the example uses)."""

    def __init__(self, x, lx, y, ly, w, *, eps: float, cost_scale: float, diameter: float) -> None:
        x = np.asarray(x, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
        lx, ly, w = np.asarray(lx), np.asarray(ly), np.asarray(w, dtype=np.float64)
        self.x_in, self.y_in = x, y
        self.a = dense_reference.normalise(None, x.shape[0])
        self.b = dense_reference.normalise(None, y.shape[0])
        mean = 0.5 * (self.a @ x + self.b @ y)  # C is translation invariant; centring bounds cancellation
        self.x, self.y, self.s = x - mean, y - mean, float(cost_scale)
        self.eps, self.precision, self.dtype = float(eps), "fp64", np.float64
        self.rho_x = self.rho_y = None
        self.diameter = float(diameter)
        self.c_xy = self.c_exact = label_cost_matrix(self.x, lx, self.y, ly, w, self.s)
        self._c_xx = label_cost_matrix(self.x, lx, self.x, lx, w, self.s)
        self._c_yy = label_cost_matrix(self.y, ly, self.y, ly, w, self.s)
        self.log_a, self.log_b = np.log(self.a), np.log(self.b)

    def schedule(self, scaling: float) -> list:
        return dense_reference.epsilon_schedule(self.diameter, np.sqrt(self.eps), scaling)


def dense_otdd(x, lx, y, ly, w, *, eps: float, cost_scale: float, scaling: float, diameter: float) -> float:
    """S_ε by the float64 dense symmetric loop (GeomLoss's schedule from `diameter`, no extra iterations)."""
    problem = LabelledDenseProblem(x, lx, y, ly, w, eps=eps, cost_scale=cost_scale, diameter=diameter)
    return float(problem.symmetric(iters=0, scaling=scaling, debias=True).cost)
