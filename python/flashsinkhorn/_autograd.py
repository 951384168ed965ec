"""torch.autograd for the Sinkhorn value and its potentials, with second derivatives in the points.

  ∂cost/∂x_i = 2s Σ_j P_ij (x_i − y_j),  ∂cost/∂y_j = 2s Σ_i P_ij (y_j − x_i),  ∂cost/∂a, ∂cost/∂b
  from the potentials (envelope theorem at convergence; docs/math.md). Backward multiplies the
  library's streamed gradients by grad_output and computes only those in ctx.needs_input_grad; a
  loss that also uses f, g adds their implicit derivative (Solver.potential_vjp).

Double backward. With create_graph=True the point gradients c·∇_X F, c·∇_Y F (c = grad_output) are
themselves differentiable (_PointGradients): for cotangents (A, B) their backward is
  x̄ = c·(H_xx A + H_xy B),  ȳ = c·(H_yx A + H_yy B),  c̄ = ⟨A, ∇_X F⟩ + ⟨B, ∇_Y F⟩,
the joint streamed Hessian-vector product (Solver.hvp_xy, one CG solve) of the solve the forward
made. For the debiased value S = OT(a,X; b,Y) − ½T_a(X) − ½T_b(Y), T_a(X) = OT(a,X; a,X), the
product is composed (_DebiasedHessian): H_S·(A, B) = H_OT·(A, B) − ½(H_T_a·A, H_T_b·B), with
H_T_a·A = u + v for (u, v) the joint product of OT(a,X; a,X′) at (A, A), X′ = X (chain rule for
X ↦ (X, X)); three solves replayed from the forward's options, built at the first second derivative.
What has no exact second derivative here raises NotImplementedError instead of returning a silently
wrong zero: unbalanced/cosine/label problems (the C++ HVP's domain; debiased ones included),
derivatives with respect to weights a, b of the x, y gradients (the mixed derivative
∂²cost/∂(a, b)∂(x, y) needs the potentials' tangent, which hvp_xy does not return), the derivative of
the gradients with respect to a, b, the second derivative of a loss of f, g, and third derivatives.
Each raises only when that derivative is actually asked for.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import torch

from ._functional import SinkhornResult, Solver


class SinkhornFunction(torch.autograd.Function):
    """cost(x, y, a, b) = OT_ε (or S_ε, or the unbalanced value); outputs (cost, f, g). A loss of f
    and g is differentiated implicitly through the optimality conditions (Solver.potential_vjp:
    balanced problems, gauge-invariant losses). Under create_graph=True the x and y gradients are
    differentiable once more (_PointGradients: the joint HVP)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, y: torch.Tensor, a: torch.Tensor | None, b: torch.Tensor | None,
                kwargs: dict) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        solver = Solver(x, y, a, b, **kwargs)
        result = solver.solve()
        ctx.solver, ctx.kwargs, ctx.hessian = solver, kwargs, None
        # Metadata only: keeping the output tensors on ctx would make a reference cycle through grad_fn.
        ctx.result = SinkhornResult(None, None, float(result.cost), result.primal_cost, result.relative_entropy,
                                    result.iterations, result.marginal_error, result.converged, result.eps,
                                    result.device, result.seconds, solver, result.f_aa, result.g_bb)
        ctx.save_for_backward(x, y, a, b)
        ctx.set_materialize_grads(False)  # an unused output's gradient arrives as None, not zeros
        return result.cost, result.f, result.g

    @staticmethod
    def backward(ctx: Any, grad_cost: torch.Tensor, grad_f: Any, grad_g: Any):
        solver: Solver = ctx.solver
        need = ctx.needs_input_grad[:4]
        x, y, a, b = ctx.saved_tensors
        create_graph = torch.is_grad_enabled()
        grads: list[torch.Tensor | None] = [None] * 4
        if grad_cost is not None:
            if create_graph and (need[0] or need[1]):
                if ctx.hessian is None:  # kept on ctx: a debiased one caches its replayed solves
                    ctx.hessian = (_DebiasedHessian(solver, x, y, a, b, ctx.kwargs) if solver._debias
                                   else _ValueHessian(solver))
                grads[:2] = _PointGradients.apply(grad_cost, x, y, ctx.hessian, need[0], need[1])
                grads[:2] = [_refusing(g, _MIXED, (a, b)) for g in grads[:2]]
            else:
                with torch.no_grad():
                    grads[:2] = [grad_cost.detach() * method() if wanted else None
                                 for wanted, method in zip(need[:2], (solver.gradient_x, solver.gradient_y))]
            with torch.no_grad():
                grads[2:] = [grad_cost.detach() * method() if wanted else None
                             for wanted, method in zip(need[2:], (solver.gradient_a, solver.gradient_b))]
            if create_graph:
                grads[2:] = [_refusing(g, _WEIGHT_GRADIENTS, (grad_cost, x, y, a, b)) for g in grads[2:]]
        if grad_f is not None or grad_g is not None:
            with torch.no_grad():
                df, dg = (None if v is None else v.detach() for v in (grad_f, grad_g))
                dtype = (df if df is not None else dg).dtype
                implicit = solver.potential_vjp(df, dg, x=need[0], y=need[1], a=need[2], b=need[3],
                                                tol=1e-10 if dtype == torch.float64 else 1e-6)
            extras = [implicit.grad_x, implicit.grad_y, implicit.grad_a, implicit.grad_b]
            if create_graph:
                extras = [_refusing(e, _POTENTIAL_LOSSES, (grad_f, grad_g, x, y, a, b)) for e in extras]
            grads = [g if e is None else (e if g is None else g + e) for g, e in zip(grads, extras)]
        return (*grads, None)


_MIXED = ("mixed second derivatives ∂²cost/∂(a, b)∂(x, y) (they need the potentials' tangent (δf, δg) of the joint "
          "HVP, which Solver.hvp_xy does not return yet; detach a, b for second derivatives in x, y)")
_WEIGHT_GRADIENTS = "derivatives of the gradients with respect to the weights a, b (the HVP covers the points x, y)"
_POTENTIAL_LOSSES = "second derivatives of a loss of the potentials f, g (the derivative of potential_vjp)"
_THIRD = ("third derivatives of the Sinkhorn value in x, y (the derivative of its Hessian-vector product with respect "
          "to the points)")


class _PointGradients(torch.autograd.Function):
    """(c·∇_X F, c·∇_Y F), c = grad_cost, whose backward is the joint HVP of the value:
    x̄ = c·(H_xx A + H_xy B), ȳ = c·(H_yx A + H_yy B), c̄ = ⟨A, ∇_X F⟩ + ⟨B, ∇_Y F⟩ for cotangents
    (A, B) of the two outputs (`hessian`: a _ValueHessian or _DebiasedHessian; H symmetric, so the
    vector-Jacobian product is H·(A, B)). An output not asked for (want_x / want_y) is None. The
    weights are not inputs: SinkhornFunction adds their (refusing) dependence separately, so that a
    derivative in x, y alone runs here."""

    @staticmethod
    def forward(ctx: Any, grad_cost: torch.Tensor, x: torch.Tensor, y: torch.Tensor, hessian: _ValueHessian,
                want_x: bool, want_y: bool):
        ctx.hessian = hessian
        ctx.set_materialize_grads(False)
        # ∇F unscaled (the forward's own gradients, debiasing terms included): constants of the solve
        # (c̄ needs them), kept on ctx as they are no input or output.
        solver = hessian.solver
        ctx.unit = [solver.gradient_x() if want_x else None, solver.gradient_y() if want_y else None]
        ctx.save_for_backward(grad_cost, x, y)
        c = grad_cost.detach()
        return tuple(None if g is None else c * g for g in ctx.unit)

    @staticmethod
    def backward(ctx: Any, grad_x: torch.Tensor | None, grad_y: torch.Tensor | None):
        if grad_x is None and grad_y is None:
            return (None,) * 6
        grad_cost, x, y = ctx.saved_tensors
        need = ctx.needs_input_grad
        grads: list[Any] = [None] * 6
        if need[1] or need[2]:
            grads[1], grads[2] = _HessianProduct.apply(grad_cost, grad_x, grad_y, ctx.hessian, need[1], need[2])
        if need[0]:  # c̄ = ⟨A, ∇_X F⟩ + ⟨B, ∇_Y F⟩: linear in (A, B), ∇F a constant of the solve
            grads[0] = sum((d * g).sum() for d, g in zip((grad_x, grad_y), ctx.unit) if d is not None)
            grads[0] = grads[0].reshape(grad_cost.shape)
        if torch.is_grad_enabled():  # the products depend on x, y too: that (third) derivative must raise
            grads[:3] = [_refusing(g, _THIRD, (x, y)) for g in grads[:3]]
        return tuple(grads)


class _HessianProduct(torch.autograd.Function):
    """(c·(H·(A, B))_x, c·(H·(A, B))_y) of the value (`hessian.product`), differentiable in c and in
    the directions (A, B): H is symmetric, so for cotangents (U, V) the vector-Jacobian product in
    (A, B) is c·H·(U, V) — this same function again — and in c it is ⟨(U, V), H·(A, B)⟩.
    (torch.autograd.functional.hvp differentiates with respect to the direction.) A direction may be
    None (zero); an output not asked for (want_x / want_y) is None."""

    @staticmethod
    def forward(ctx: Any, c: torch.Tensor, direction_x: torch.Tensor | None, direction_y: torch.Tensor | None,
                hessian: _ValueHessian, want_x: bool, want_y: bool):
        ctx.hessian = hessian
        ctx.set_materialize_grads(False)
        ctx.save_for_backward(c)
        directions = [None if d is None else d.detach() for d in (direction_x, direction_y)]
        ctx.unscaled = hessian.product(*directions, want_x, want_y)  # H·(A, B), for c̄
        c = c.detach()
        return tuple(None if h is None else c * h for h in ctx.unscaled)

    @staticmethod
    def backward(ctx: Any, grad_x: torch.Tensor | None, grad_y: torch.Tensor | None):
        if grad_x is None and grad_y is None:
            return (None,) * 6
        (c,) = ctx.saved_tensors
        need = ctx.needs_input_grad
        grads: list[Any] = [None] * 6
        if need[1] or need[2]:
            grads[1], grads[2] = _HessianProduct.apply(c, grad_x, grad_y, ctx.hessian, need[1], need[2])
        if need[0]:
            grads[0] = sum((u * h).sum() for u, h in zip((grad_x, grad_y), ctx.unscaled)
                           if u is not None and h is not None)
            grads[0] = torch.zeros_like(c) + grads[0]
            if torch.is_grad_enabled():  # H·(A, B) is held as a constant here: its derivative must raise
                grads[0] = _refusing(grads[0], "derivatives of ⟨(U, V), H·(A, B)⟩ (the gradient of a Hessian-vector "
                                     "product with respect to its scale)", (c, grad_x, grad_y))
        return tuple(grads)


class _ValueHessian:
    """H·(A, B) = (H_xx A + H_xy B, H_yx A + H_yy B) of OT_ε(a,X; b,Y) at the forward's solve:
    Solver.hvp_xy on the forward's own solver (one CG solve, to 1e-10 in float64, 1e-6 otherwise)."""

    def __init__(self, solver: Solver) -> None:
        self.solver = solver

    def product(self, dx: torch.Tensor | None, dy: torch.Tensor | None, want_x: bool,
                want_y: bool) -> tuple[torch.Tensor | None, torch.Tensor | None]:
        return _joint_product(self.solver, dx, dy, want_x, want_y)


class _DebiasedHessian(_ValueHessian):
    """H_S·(A, B) = H_OT·(A, B) − ½(H_T_a·A, H_T_b·B) of the Sinkhorn divergence
    S_ε = OT_ε(a,X; b,Y) − ½T_a(X) − ½T_b(Y),  T_a(X) = OT_ε(a,X; a,X),  T_b(Y) = OT_ε(b,Y; b,Y).

    T_a moves X on both sides: with G(X, X′) = OT_ε(a,X; a,X′), T_a(X) = G(X, X), so by the chain rule
    H_T_a·A = u + v where (u, v) = H_G·(A, A) is G's joint product (Solver.hvp_xy) at X′ = X; likewise
    T_b with B. Hence x̄ gains −½(u + v) only when A ≠ 0 and ȳ only when B ≠ 0.

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
            u, v = _joint_product(self._replay("xx"), dx, dx, True, True)
            px = px - 0.5 * (u + v)
        if want_y and dy is not None:
            u, v = _joint_product(self._replay("yy"), dy, dy, True, True)
            py = py - 0.5 * (u + v)
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


def _joint_product(solver: Solver, dx: torch.Tensor | None, dy: torch.Tensor | None, want_x: bool,
                   want_y: bool) -> tuple[torch.Tensor | None, torch.Tensor | None]:
    """(H_xx A + H_xy B, H_yx A + H_yy B) of a solved plain solver, CG to 1e-10 (float64) or 1e-6;
    a CG that stops short is reported by a RuntimeWarning, not raised."""
    dtype = (dx if dx is not None else dy).dtype
    product = solver.hvp_xy(dx, dy, x=want_x, y=want_y, tol=1e-10 if dtype == torch.float64 else 1e-6, iters=1000)
    if not product.converged:
        warnings.warn(f"flashsinkhorn double backward: the HVP's CG stopped at relative residual "
                      f"{product.relative_residual:.2e} (not converged); the product is that of its last iterate",
                      RuntimeWarning, stacklevel=3)
    return product.product_x, product.product_y


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


class _NotTwiceDifferentiable(torch.autograd.Function):
    """Identity whose backward raises NotImplementedError naming `what` (see _refusing). The tensors
    the missing derivative is with respect to ride along as inputs, so that a derivative with
    respect to them reaches this node and raises instead of being silently zero."""

    @staticmethod
    def forward(ctx: Any, value: torch.Tensor, what: str, *inputs: torch.Tensor) -> torch.Tensor:
        ctx.what = what
        return value.clone()

    @staticmethod
    def backward(ctx: Any, *grad_outputs: Any):
        raise NotImplementedError(f"flashsinkhorn: {ctx.what} are not implemented")


def _refusing(value: torch.Tensor | None, what: str, depends_on: tuple) -> torch.Tensor | None:
    """value + 0, where the 0 depends on the tensors of `depends_on` that require grad and its derivative
    raises NotImplementedError naming `what`: a derivative of value with respect to one of them raises,
    one with respect to anything else runs as before (the engine never visits the zero's node)."""
    inputs = [t for t in depends_on if isinstance(t, torch.Tensor) and t.requires_grad]
    if value is None or not inputs:
        return value
    return value + _NotTwiceDifferentiable.apply(torch.zeros_like(value), what, *inputs)


def differentiable_sinkhorn(x: torch.Tensor, y: torch.Tensor, a: torch.Tensor | None, b: torch.Tensor | None,
                            kwargs: dict) -> SinkhornResult:
    """`sinkhorn()` with a differentiable `cost` (see SinkhornFunction)."""
    if not torch.is_grad_enabled():
        return Solver(x, y, a, b, **kwargs).solve()
    x, y, a, b = _tensor(x), _tensor(y), _tensor(a), _tensor(b)
    cost, f, g = SinkhornFunction.apply(x, y, a, b, kwargs)
    # ctx is not reachable from here; the solved Solver rides on the graph node.
    node = cost.grad_fn
    result: SinkhornResult = node.result if node is not None and hasattr(node, "result") else None
    if result is None:  # no input required grad after all
        return Solver(x, y, a, b, **kwargs).solve()
    return SinkhornResult(f, g, cost, result.primal_cost, result.relative_entropy, result.iterations,
                          result.marginal_error, result.converged, result.eps, result.device, result.seconds,
                          result.solver, result.f_aa, result.g_bb)


def _tensor(value: Any) -> torch.Tensor | None:
    """A tensor for SinkhornFunction.apply (NumPy arrays and lists mixed with tensors become tensors)."""
    return value if value is None or isinstance(value, torch.Tensor) else torch.as_tensor(value)
