"""torch.autograd for the Sinkhorn value and its potentials, with second derivatives in the points.

  ∂cost/∂x_i = 2s Σ_j P_ij (x_i − y_j),  ∂cost/∂y_j = 2s Σ_i P_ij (y_j − x_i),  ∂cost/∂a, ∂cost/∂b
  from the potentials (envelope theorem at convergence; docs/math.md). Backward multiplies the
  library's streamed gradients by grad_output and computes only those in ctx.needs_input_grad; a
  loss that also uses f, g adds their implicit derivative (Solver.potential_vjp).

Double backward. With create_graph=True the point gradients c·∇_X F, c·∇_Y F (c = grad_output) are
themselves differentiable (_PointGradients): for cotangents (A, B) their backward is
  x̄ = c·(H_xx A + H_xy B),  ȳ = c·(H_yx A + H_yy B),  c̄ = ⟨A, ∇_X F⟩ + ⟨B, ∇_Y F⟩,
the joint streamed Hessian-vector product (Solver.hvp_xy, one CG solve) of the solve the forward
made. What has no exact second derivative here raises NotImplementedError instead of returning a
silently wrong zero: debiased values (the HVP of the self terms OT(a, a), OT(b, b) is not
implemented), unbalanced/cosine/label problems (the C++ HVP's domain), derivatives with respect to
weights a, b of the x, y gradients (the mixed derivative ∂²cost/∂(a, b)∂(x, y) needs the potentials'
tangent, which hvp_xy does not return), the derivative of the gradients with respect to a, b, the
second derivative of a loss of f, g, and third derivatives. Each raises only when that derivative is
actually asked for.
"""

from __future__ import annotations

import warnings
from typing import Any

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
        ctx.solver = solver
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
                grads[:2] = _PointGradients.apply(grad_cost, x, y, solver, need[0], need[1])
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
    """(c·∇_X F, c·∇_Y F), c = grad_cost, whose backward is the joint HVP of the solve:
    x̄ = c·(H_xx A + H_xy B), ȳ = c·(H_yx A + H_yy B), c̄ = ⟨A, ∇_X F⟩ + ⟨B, ∇_Y F⟩ for cotangents
    (A, B) of the two outputs (Solver.hvp_xy; H symmetric, so the vector-Jacobian product is H·(A, B)).
    An output not asked for (want_x / want_y) is None. The weights are not inputs: SinkhornFunction
    adds their (refusing) dependence separately, so that a derivative in x, y alone runs here."""

    @staticmethod
    def forward(ctx: Any, grad_cost: torch.Tensor, x: torch.Tensor, y: torch.Tensor, solver: Solver, want_x: bool,
                want_y: bool):
        ctx.solver = solver
        ctx.set_materialize_grads(False)
        # ∇F unscaled: constants of the solve (c̄ needs them), kept on ctx as they are no input or output.
        ctx.unit = [solver.gradient_x() if want_x else None, solver.gradient_y() if want_y else None]
        ctx.save_for_backward(grad_cost, x, y)
        c = grad_cost.detach()
        return tuple(None if g is None else c * g for g in ctx.unit)

    @staticmethod
    def backward(ctx: Any, grad_x: torch.Tensor | None, grad_y: torch.Tensor | None):
        if grad_x is None and grad_y is None:
            return (None,) * 6
        solver: Solver = ctx.solver
        grad_cost, x, y = ctx.saved_tensors
        need = ctx.needs_input_grad
        if solver._debias:
            raise NotImplementedError(
                "double backward of the debiased Sinkhorn divergence S_eps = OT(a, b) − ½OT(a, a) − ½OT(b, b) is not "
                "implemented: the Hessian-vector product of the self terms OT(a, a), OT(b, b) is missing (the C++ "
                "HVP refuses debiased solves); use debias=False for second derivatives of OT_eps(a, b)")
        grads: list[Any] = [None] * 6
        if need[1] or need[2]:
            grads[1], grads[2] = _HessianProduct.apply(grad_cost, grad_x, grad_y, solver, need[1], need[2])
        if need[0]:  # c̄ = ⟨A, ∇_X F⟩ + ⟨B, ∇_Y F⟩: linear in (A, B), ∇F a constant of the solve
            grads[0] = sum((d * g).sum() for d, g in zip((grad_x, grad_y), ctx.unit) if d is not None)
            grads[0] = grads[0].reshape(grad_cost.shape)
        if torch.is_grad_enabled():  # the products depend on x, y too: that (third) derivative must raise
            grads[:3] = [_refusing(g, _THIRD, (x, y)) for g in grads[:3]]
        return tuple(grads)


class _HessianProduct(torch.autograd.Function):
    """(c·(H_xx A + H_xy B), c·(H_yx A + H_yy B)) of a solved Solver (Solver.hvp_xy), differentiable in
    c and in the directions (A, B): H is symmetric, so for cotangents (U, V) the vector-Jacobian
    product in (A, B) is c·H·(U, V) — this same function again — and in c it is ⟨(U, V), H·(A, B)⟩.
    (torch.autograd.functional.hvp differentiates with respect to the direction.) A direction may be
    None (zero); an output not asked for (want_x / want_y) is None."""

    @staticmethod
    def forward(ctx: Any, c: torch.Tensor, direction_x: torch.Tensor | None, direction_y: torch.Tensor | None,
                solver: Solver, want_x: bool, want_y: bool):
        ctx.solver = solver
        ctx.set_materialize_grads(False)
        ctx.save_for_backward(c)
        directions = [None if d is None else d.detach() for d in (direction_x, direction_y)]
        dtype = (directions[0] if directions[0] is not None else directions[1]).dtype
        product = solver.hvp_xy(*directions, x=want_x, y=want_y, tol=1e-10 if dtype == torch.float64 else 1e-6,
                                iters=1000)
        if not product.converged:
            warnings.warn(f"flashsinkhorn double backward: the HVP's CG stopped at relative residual "
                          f"{product.relative_residual:.2e} (not converged); the product is that of its last iterate",
                          RuntimeWarning, stacklevel=2)
        ctx.unscaled = (product.product_x, product.product_y)  # H·(A, B), for c̄
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
            grads[1], grads[2] = _HessianProduct.apply(c, grad_x, grad_y, ctx.solver, need[1], need[2])
        if need[0]:
            grads[0] = sum((u * h).sum() for u, h in zip((grad_x, grad_y), ctx.unscaled)
                           if u is not None and h is not None)
            grads[0] = torch.zeros_like(c) + grads[0]
            if torch.is_grad_enabled():  # H·(A, B) is held as a constant here: its derivative must raise
                grads[0] = _refusing(grads[0], "derivatives of ⟨(U, V), H·(A, B)⟩ (the gradient of a Hessian-vector "
                                     "product with respect to its scale)", (c, grad_x, grad_y))
        return tuple(grads)


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
