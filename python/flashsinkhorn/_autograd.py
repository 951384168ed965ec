"""torch.autograd for the Sinkhorn value and its potentials (first order).

  ∂cost/∂x_i = 2s Σ_j P_ij (x_i − y_j),  ∂cost/∂y_j = 2s Σ_i P_ij (y_j − x_i),  ∂cost/∂a, ∂cost/∂b
  from the potentials (envelope theorem at convergence; docs/math.md). Backward multiplies the
  library's streamed gradients by grad_output and computes only those in ctx.needs_input_grad; a
  loss that also uses f, g adds their implicit derivative (Solver.potential_vjp).

Double backward (the streaming HVP) is not available yet: differentiating a gradient raises
NotImplementedError instead of returning a silently wrong zero.
"""

from __future__ import annotations

from typing import Any

import torch

from ._functional import SinkhornResult, Solver


class SinkhornFunction(torch.autograd.Function):
    """cost(x, y, a, b) = OT_ε (or S_ε, or the unbalanced value); outputs (cost, f, g). A loss of f
    and g is differentiated implicitly through the optimality conditions (Solver.potential_vjp:
    balanced problems, gauge-invariant losses)."""

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
        ctx.save_for_backward(*(v for v in (x, y, a, b) if v is not None))
        ctx.set_materialize_grads(False)  # an unused output's gradient arrives as None, not zeros
        return result.cost, result.f, result.g

    @staticmethod
    def backward(ctx: Any, grad_cost: torch.Tensor, grad_f: Any, grad_g: Any):
        solver: Solver = ctx.solver
        need = ctx.needs_input_grad[:4]
        with torch.no_grad():
            grads = [grad_cost.detach() * method() if wanted and grad_cost is not None else None
                     for wanted, method in zip(need, (solver.gradient_x, solver.gradient_y, solver.gradient_a,
                                                      solver.gradient_b))]
            if grad_f is not None or grad_g is not None:
                df, dg = (None if v is None else v.detach() for v in (grad_f, grad_g))
                dtype = (df if df is not None else dg).dtype
                implicit = solver.potential_vjp(df, dg, x=need[0], y=need[1], a=need[2], b=need[3],
                                                tol=1e-10 if dtype == torch.float64 else 1e-6)
                grads = [g if extra is None else (extra if g is None else g + extra)
                         for g, extra in zip(grads, (implicit.grad_x, implicit.grad_y, implicit.grad_a,
                                                     implicit.grad_b))]
        if torch.is_grad_enabled():  # create_graph=True: the gradients must refuse a second derivative
            inputs = ctx.saved_tensors
            grads = [None if g is None else _FirstOrderOnly.apply(g, *inputs) for g in grads]
        return (*grads, None)


class _FirstOrderOnly(torch.autograd.Function):
    """Identity on a gradient whose backward raises: the gradient depends on the inputs, but its
    derivative (the Hessian, streamed by the HVP) is not wired yet."""

    @staticmethod
    def forward(ctx: Any, grad: torch.Tensor, *inputs: torch.Tensor) -> torch.Tensor:
        return grad.clone()

    @staticmethod
    def backward(ctx: Any, *grad_outputs: Any):
        raise NotImplementedError("double backward through flashsinkhorn (Hessian-vector products) is not available "
                                  "yet: only first derivatives of the Sinkhorn value are implemented")


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
