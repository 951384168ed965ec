"""The second-order products behind torch's double backward and torch.func (_autograd.py): the
Hessian of the Sinkhorn value in the points, applied to cotangents (A, B) of its gradients.

  plain     H·(A, B) = (H_xx A + H_xy B, H_yx A + H_yy B)          Solver.hvp_xy on the forward's solve
  debiased  H_S·(A, B) = H_OT·(A, B) − ½(H_T_a·A, H_T_b·B)          three replayed plain solves
with T_a(X) = OT_ε(a,X; a,X) (Solver.hvp(A, wrt='self')). docs/math.md, "The joint product".
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import torch

from ._functional import Solver


class ValueHessian:
    """H·(A, B) = (H_xx A + H_xy B, H_yx A + H_yy B) of OT_ε(a,X; b,Y) at the forward's solve:
    Solver.hvp_xy on the forward's own solver (one CG solve, to 1e-10 in float64, 1e-6 otherwise)."""

    def __init__(self, solver: Solver) -> None:
        self.solver = solver

    def product(self, dx: torch.Tensor | None, dy: torch.Tensor | None, want_x: bool,
                want_y: bool) -> tuple[torch.Tensor | None, torch.Tensor | None]:
        return _joint_product(self.solver, dx, dy, want_x, want_y)


class DebiasedHessian(ValueHessian):
    """H_S·(A, B) = H_OT·(A, B) − ½(H_T_a·A, H_T_b·B) of the Sinkhorn divergence
    S_ε = OT_ε(a,X; b,Y) − ½T_a(X) − ½T_b(Y),  T_a(X) = OT_ε(a,X; a,X),  T_b(Y) = OT_ε(b,Y; b,Y).

    T_a moves X on both sides: with G(X, X′) = OT_ε(a,X; a,X′), T_a(X) = G(X, X), so by the chain rule
    H_T_a·A = u + v where (u, v) = H_G·(A, A) is G's joint product at X′ = X; likewise T_b with B.
    Hence x̄ gains −½(u + v) only when A ≠ 0 and ȳ only when B ≠ 0. Solver.hvp(A, wrt='self') computes
    u + v with the potentials' response from the symmetric system (diag a + P)·δ = ρ, well conditioned
    where the joint product's Schur complement is nearly singular (a self-problem at small ε).

    The forward's solver is debiased (the C++ HVP refuses it), so three plain solvers replay its
    solve, each built and solved at its first use (a second derivative that needs it):
      OT_ε(a,X; b,Y) with the forward's options and debias=False: the same (f, g) iterations;
      OT_ε(a,X; a,X) and OT_ε(b,Y; b,Y) with solver='symmetric' — the forward's averaged update
        f_aa ← ½(f_aa + T(f_aa)) with f = g throughout — and, under ε-scaling, the forward's schedule
        from its own diameter (the joint bounding box of X and Y unless given), not the one-cloud box.
    Same eps, cost_scale, scaling, iters, tol, check_every, precision, device, threads, weights. The
    replays reproduce the forward's f, g, f_aa, g_bb to rounding when the forward ran the symmetric
    loop (also for GeomLoss's schedule-only default, iters=0) and to its tolerance otherwise (the
    alternating forward does not extrapolate its self terms; separate stopping tests). Unbalanced,
    cosine and label problems are refused before any solve (the C++ HVP's domain)."""

    def __init__(self, solver: Solver, x: torch.Tensor, y: torch.Tensor, a: torch.Tensor | None,
                 b: torch.Tensor | None, kwargs: dict) -> None:
        super().__init__(solver)
        # Detached views share the version counter: a replay after an in-place change is refused.
        self._inputs = [None if t is None else t.detach() for t in (x, y, a, b)]
        self._versions = [None if t is None else t._version for t in self._inputs]
        self._kwargs = dict(kwargs, debias=False)
        self._replays: dict[str, Solver] = {}

    def product(self, dx: torch.Tensor | None, dy: torch.Tensor | None, want_x: bool,
                want_y: bool) -> tuple[torch.Tensor | None, torch.Tensor | None]:
        self._refuse_outside_domain()
        px, py = _joint_product(self._replay("xy"), dx, dy, want_x, want_y)
        if want_x and dx is not None:
            px = px - 0.5 * _self_product(self._replay("xx"), dx)
        if want_y and dy is not None:
            py = py - 0.5 * _self_product(self._replay("yy"), dy)
        return px, py

    def _refuse_outside_domain(self) -> None:
        o = self._kwargs
        reasons = [why for why, refused in (
            ("unbalanced (reach, reach_x or reach_y is set): Hessian-vector products are implemented for balanced "
             "problems only", any(o.get(k) is not None for k in ("reach", "reach_x", "reach_y"))),
            ("the cosine cost: Hessian-vector products are implemented for the squared-Euclidean cost only",
             o.get("cost", "sqeuclidean") == "cosine"),
            ("a label cost: Hessian-vector products do not support label costs", o.get("labels") is not None))
            if refused]
        if reasons:
            raise NotImplementedError("flashsinkhorn: double backward of this debiased value is not implemented — "
                                      + "; ".join(reasons))

    def _replay(self, which: str) -> Solver:
        """The solved plain solver of OT(a,X; b,Y) ('xy'), OT(a,X; a,X) ('xx') or OT(b,Y; b,Y) ('yy')."""
        replay = self._replays.get(which)
        if replay is not None:
            return replay
        for t, version in zip(self._inputs, self._versions):
            if t is not None and t._version != version:
                raise RuntimeError("flashsinkhorn double backward: x, y, a or b was modified in place after the "
                                   "forward; the debiased Hessian replays the solve from them")
        x, y, a, b = self._inputs
        options = self._kwargs
        if which == "xy":
            replay = Solver(x, y, a, b, **options)
        else:
            points, weights = (x, a) if which == "xx" else (y, b)
            options = dict(options, solver="symmetric", initial_f=None, initial_g=None)
            if options.get("scaling") is not None and options.get("diameter") is None:
                options["diameter"] = _joint_diameter(x, y)
            replay = Solver(points, points, weights, weights, **options)
        replay.solve()
        self._replays[which] = replay
        return replay


# The CG settings of a double backward's products: to 1e-10 in float64, 1e-6 otherwise, 1000 steps.
# The joint products of single-precision solves take the sparse preconditioner, which falls back to
# float64 passes where it falls short (docs/math.md, "The product is then redone in float64"). CPU,
# 2 threads, 10 iterations at ε = 0.1, one double backward (session 50): 1,000 × 64 0.64 s converged
# against 6.4 s unconverged (4e-5) with the diagonal; 1,000 × 8 0.23 s against 3.0 s; 2,000 × 3 0.29 s
# against 0.48 s. Float64 keeps the diagonal (sparse took 12 s against 2.4 s at 1,000 × 64, neither
# reaching 1e-10). The self product's symmetric system takes the diagonal in every precision.
def _cg_settings(dtype: torch.dtype, joint: bool = False) -> dict:
    single = dtype != torch.float64
    return dict(tol=1e-6 if single else 1e-10, iters=1000,
                **({"preconditioner": "sparse"} if joint and single else {}))


def _warn_unless_converged(product, what: str):
    """A CG that stops short is reported by a RuntimeWarning, not raised; returns the product."""
    if not product.converged:
        warnings.warn(f"flashsinkhorn double backward: {what}'s CG stopped at relative residual "
                      f"{product.relative_residual:.2e} (not converged); the product is that of its last iterate",
                      RuntimeWarning, stacklevel=4)
    return product


def _joint_product(solver: Solver, dx: torch.Tensor | None, dy: torch.Tensor | None, want_x: bool,
                   want_y: bool) -> tuple[torch.Tensor | None, torch.Tensor | None]:
    """(H_xx A + H_xy B, H_yx A + H_yy B) of a solved plain solver."""
    dtype = (dx if dx is not None else dy).dtype
    product = _warn_unless_converged(solver.hvp_xy(dx, dy, x=want_x, y=want_y, **_cg_settings(dtype, joint=True)),
                                     "the HVP")
    return product.product_x, product.product_y


def _self_product(solver: Solver, direction: torch.Tensor) -> torch.Tensor:
    """H_T·A of a solved symmetric solver (T(X) = OT_ε(a,X; a,X))."""
    product = solver.hvp(direction, wrt="self", **_cg_settings(direction.dtype))
    return _warn_unless_converged(product, "the self term").product


def _joint_diameter(x: torch.Tensor, y: torch.Tensor) -> float | None:
    """The core's default ε-schedule diameter: the diagonal of the joint bounding box of x and y, in
    float64 as prepare.cpp's joint_diameter (NumPy: a handful of values, no torch dispatch); None
    when a cloud is empty or the box is a point (the core's own choice then)."""
    if x.shape[0] == 0 or y.shape[0] == 0:
        return None
    points = np.concatenate([t.detach().cpu().numpy().astype(np.float64, copy=False).reshape(t.shape[0], -1)
                             for t in (x, y)])
    diameter = float(np.sqrt(((points.max(axis=0) - points.min(axis=0)) ** 2).sum()))
    return diameter if diameter > 0 and math.isfinite(diameter) else None
