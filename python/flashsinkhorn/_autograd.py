"""torch.autograd for the Sinkhorn value and its potentials, with second derivatives in the points.

  ∂cost/∂x_i = 2s Σ_j P_ij (x_i − y_j),  ∂cost/∂y_j = 2s Σ_i P_ij (y_j − x_i),  ∂cost/∂a, ∂cost/∂b
  from the potentials (envelope theorem at convergence; docs/math.md). Backward multiplies the
  library's streamed gradients by grad_output and computes only those in ctx.needs_input_grad; a
  loss that also uses f, g adds their implicit derivative (Solver.potential_vjp).

Double backward. With create_graph=True the point gradients are c·∇_X F, c·∇_Y F (c = grad_output)
with ∇F differentiable in the points (_PointGradients): for cotangents (A, B) its backward is
  x̄ = (H_xx A + H_xy B),  ȳ = (H_yx A + H_yy B),
and the product with c (an ordinary torch multiplication) adds c̄ = ⟨A, ∇_X F⟩ + ⟨B, ∇_Y F⟩ and the
factor c; H·(A, B) is the joint streamed Hessian-vector product (Solver.hvp_xy, one CG solve) of the
solve the forward made. For the debiased value S = OT(a,X; b,Y) − ½T_a(X) − ½T_b(Y),
T_a(X) = OT(a,X; a,X), the product is composed (DebiasedHessian): H_S·(A, B) = H_OT·(A, B) − ½(H_T_a·A, H_T_b·B), with
H_T_a·A = u + v for (u, v) the joint product of OT(a,X; a,X′) at (A, A), X′ = X (chain rule for
X ↦ (X, X)); three solves replayed from the forward's options, built at the first second derivative.
What has no exact second derivative here raises NotImplementedError instead of returning a silently
wrong zero: unbalanced/cosine/label problems (the C++ HVP's domain; debiased ones included),
derivatives with respect to weights a, b of the x, y gradients (the mixed derivative
∂²cost/∂(a, b)∂(x, y) needs the potentials' tangent, which hvp_xy does not return), the derivative of
the gradients with respect to a, b, the second derivative of a loss of f, g, and third derivatives.
Each raises only when that derivative is actually asked for.

torch.func. The Functions are in the setup_context form (forward without ctx; the solve rides on a
_Solve passed as a non-tensor input, because under a transform the forward sees the tensors below
it), so torch.func.grad, grad_and_value, vjp, jacrev run the same backward. Forward mode: the value's
tangent is ⟨∇F, (Ẋ, Ẏ, ȧ, ḃ)⟩; the tangent of the gradient map along (Ẋ, Ẏ) is H·(Ẋ, Ẏ) — the same
streamed product, H symmetric — so torch.func.jvp(torch.func.grad(f), (x,), (v,)) (forward-over-
reverse) and torch.func.vjp(torch.func.grad(f), x)[1](v) (reverse-over-reverse) both give H·v, and
torch.func.hessian (jacfwd of jacrev) works, one streamed product per column. vmap: the product
loops over the batched directions; the solve accepts only a batch that repeats one problem (jacfwd's
broadcast primal). The potentials' tangents ḟ, ġ are not available (forward mode of a loss of f, g):
NaN. The refusals above hold in forward mode too (their jvp raises).
"""

from __future__ import annotations

import inspect
import math
from typing import Any

import torch
from torch.autograd import forward_ad

from ._functional import SinkhornResult, Solver, _under_transform, solve_plain
from ._hessians import DebiasedHessian, ValueHessian


class _Solve:
    """The forward's solve, shared by the Functions built on it (a non-tensor input of each): the
    solved Solver, its result's metadata, the plain (unwrapped, detached) inputs it was built from and
    the Hessian of the value, made at the first second derivative. Under torch.func the forward runs
    on the tensors below every transform, so everything here is plain; setup_context only reads it."""

    __slots__ = ("kwargs", "solver", "result", "inputs", "_hessian", "_early_gradients")

    def __init__(self, kwargs: dict) -> None:
        self.kwargs = kwargs
        self.solver: Solver | None = None
        self.result: SinkhornResult | None = None
        self.inputs: tuple = ()
        self._hessian: ValueHessian | None = None
        self._early_gradients: list[torch.Tensor | None] = [None, None]

    def start_gradients(self, x: bool, y: bool) -> None:
        """Enqueues ∇_X F and ∇_Y F (those asked for) right after a solve on CUDA tensors read in place,
        so that the GPU computes them while the host goes through torch's autograd engine toward the
        backward (which then only scales them: point_gradient). ~0.4 ms of host time on the H100
        machine for the engine alone, against ~0.25 ms of GPU time for the gradient at 10⁴ × 8
        (bench/studies/gradient_call_breakdown.py). A forward whose backward never comes pays those
        plan passes; solves on the host compute nothing ahead (nothing would overlap)."""
        if not self.solver._in_place:
            return
        if x:
            self._early_gradients[0] = self.solver.gradient_x()
        if y:
            self._early_gradients[1] = self.solver.gradient_y()

    def point_gradient(self, side: int) -> torch.Tensor:
        """∇_X F (side 0) or ∇_Y F (side 1) of the solve: the one start_gradients enqueued (taken once:
        a second backward through a retained graph computes it again), else computed now."""
        early = self._early_gradients[side]
        if early is not None:
            self._early_gradients[side] = None
            return early
        return self.solver.gradient_x() if side == 0 else self.solver.gradient_y()

    def run(self, x: torch.Tensor, y: torch.Tensor, a: torch.Tensor | None,
            b: torch.Tensor | None) -> SinkhornResult:
        # Detached views share the version counter: a debiased replay after an in-place change is refused.
        self.inputs = tuple(None if t is None else t.detach() for t in (x, y, a, b))
        result = solve_plain(*self.inputs, self.kwargs)
        solver = self.solver = result.solver
        # Metadata only: keeping the output tensors (cost, f, g) here, on ctx, would make a reference
        # cycle through their grad_fn.
        self.result = SinkhornResult(None, None, None, result.primal, result.iterations,
                                     result.marginal_error, result.converged, result.eps, result.device,
                                     result.seconds, solver, result.f_aa, result.g_bb)
        return result

    def hessian(self) -> ValueHessian:
        if self._hessian is None:  # a debiased one caches its replayed solves
            self._hessian = (DebiasedHessian(self.solver, *self.inputs, self.kwargs) if self.solver._debias
                             else ValueHessian(self.solver))
        return self._hessian


class SinkhornFunction(torch.autograd.Function):
    """cost(x, y, a, b) = OT_ε (or S_ε, or the unbalanced value); outputs (cost, f, g). A loss of f
    and g is differentiated implicitly through the optimality conditions (Solver.potential_vjp:
    balanced problems, gauge-invariant losses). Under create_graph=True the x and y gradients are
    differentiable once more (_PointGradients: the joint HVP).

    torch.func: the setup_context form makes grad, vjp, jacrev and their compositions work; `jvp` is
    the forward mode, ċost = ⟨∇_X F, Ẋ⟩ + ⟨∇_Y F, Ẏ⟩ + ⟨∇_a F, ȧ⟩ + ⟨∇_b F, ḃ⟩ (envelope theorem). The
    potentials' tangents (ḟ, ġ) would need the tangent of the potentials' system, which the library
    does not return: they are NaN, so that a forward-mode derivative of a loss of f, g is visibly
    undefined rather than silently zero. `vmap` accepts only a batch of one problem repeated (what
    jacfwd and torch.func.hessian make: the primal broadcast along the tangents' batch), solved once."""

    @staticmethod
    def forward(x: torch.Tensor, y: torch.Tensor, a: torch.Tensor | None, b: torch.Tensor | None,
                solve: _Solve) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        result = solve.run(x, y, a, b)
        return result.cost, result.f, result.g

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple, output: Any) -> None:
        x, y, a, b, solve = inputs
        ctx.solve = solve
        ctx.save_for_backward(x, y, a, b)
        ctx.set_materialize_grads(False)  # an unused output's gradient arrives as None, not zeros

    @staticmethod
    def backward(ctx: Any, grad_cost: torch.Tensor, grad_f: Any, grad_g: Any):
        solve: _Solve = ctx.solve
        solver = solve.solver
        need = ctx.needs_input_grad[:4]
        create_graph = torch.is_grad_enabled()
        if not create_graph and grad_f is None and grad_g is None and grad_cost is not None:
            # First order, the value alone (a training loop's loss.backward()): grad mode is off already,
            # and the saved inputs are not read — the streamed gradients scaled by the incoming one.
            return (grad_cost * solve.point_gradient(0) if need[0] else None,
                    grad_cost * solve.point_gradient(1) if need[1] else None,
                    grad_cost * solver.gradient_a() if need[2] else None,
                    grad_cost * solver.gradient_b() if need[3] else None, None)
        x, y, a, b = ctx.saved_tensors
        grads: list[torch.Tensor | None] = [None] * 4
        if grad_cost is not None:
            if create_graph and (need[0] or need[1]):
                # c·∇F with ∇F differentiable in x, y (_PointGradients) and c = grad_cost by the product rule.
                units = _PointGradients.apply(x, y, solve, need[0], need[1])
                grads[:2] = [None if u is None else _refusing(grad_cost * u, _MIXED, (a, b)) for u in units]
            else:
                with torch.no_grad():
                    grads[:2] = [grad_cost.detach() * solve.point_gradient(side) if wanted else None
                                 for side, wanted in enumerate(need[:2])]
            with torch.no_grad():
                grads[2:] = [grad_cost.detach() * method() if wanted else None
                             for wanted, method in zip(need[2:], (solver.gradient_a, solver.gradient_b))]
            if create_graph:
                grads[2:] = [_refusing(g, _WEIGHT_GRADIENTS, (grad_cost, x, y, a, b)) for g in grads[2:]]
        if grad_f is not None or grad_g is not None:
            extras = _PotentialVjp.apply(grad_f, grad_g, x, y, a, b, solve, need)
            grads = [g if e is None else (e if g is None else g + e) for g, e in zip(grads, extras)]
        return (*grads, None)

    @staticmethod
    def jvp(ctx: Any, tangent_x: Any, tangent_y: Any, tangent_a: Any, tangent_b: Any, _solve: Any):
        solver = ctx.solve.solver
        terms = [(t * method()).sum() for t, method in zip(
            (tangent_x, tangent_y, tangent_a, tangent_b),
            (solver.gradient_x, solver.gradient_y, solver.gradient_a, solver.gradient_b)) if t is not None]
        if not terms:
            return None, None, None
        frame = solver._frame
        unknown = [torch.full((rows,), math.nan, dtype=frame.dtype, device=frame.device)
                   for rows in (solver._n, solver._m)]
        return sum(terms[1:], terms[0]).to(frame.dtype), *unknown

    @staticmethod
    def vmap(info: Any, in_dims: tuple, x: torch.Tensor, y: torch.Tensor, a: torch.Tensor | None,
             b: torch.Tensor | None, solve: _Solve):
        # One problem repeated along the batch (jacfwd's broadcast primal): solve it once, unbatched.
        return SinkhornFunction.apply(*_one_problem((x, y, a, b), in_dims[:4]), solve), (None, None, None)


def _item(t: torch.Tensor | None, dim: int | None, k: int) -> torch.Tensor | None:
    """Slice k of t along its vmap batch dimension (t itself when it is not batched)."""
    return t if t is None or dim is None else t.select(dim, k)


def _one_problem(tensors: tuple, in_dims: tuple) -> list:
    """The unbatched tensors of a vmap whose batch repeats one problem (jacfwd broadcasts the primal
    along its tangents' batch): slice 0 of each batched one. Different problems would need one solve
    (and one saved solver) each: refused."""
    slices = []
    for t, dim in zip(tensors, in_dims):
        if t is None or dim is None:
            slices.append(t)
            continue
        first = t.select(dim, 0)
        if t.stride(dim) != 0 and not torch.equal(t, first.unsqueeze(dim).expand_as(t)):
            raise NotImplementedError(
                "flashsinkhorn: torch.func.vmap over different Sinkhorn problems is not implemented (each needs "
                "its own solve); call sinkhorn per problem, or SamplesLoss with (B, N, D) batches")
        slices.append(first)
    return slices


_MIXED = ("mixed second derivatives ∂²cost/∂(a, b)∂(x, y) (they need the potentials' tangent (δf, δg) of the joint "
          "HVP, which Solver.hvp_xy does not return yet; detach a, b for second derivatives in x, y)")
_WEIGHT_GRADIENTS = "derivatives of the gradients with respect to the weights a, b (the HVP covers the points x, y)"
_POTENTIAL_LOSSES = "second derivatives of a loss of the potentials f, g (the derivative of potential_vjp)"
_THIRD = ("third derivatives of the Sinkhorn value in x, y (the derivative of its Hessian-vector product with respect "
          "to the points)")


class _PotentialVjp(torch.autograd.Function):
    """(x̄, ȳ, ā, b̄) of a loss of the potentials with cotangents (ḟ, ġ) = (grad_f, grad_g): the implicit
    derivative through the optimality conditions (Solver.potential_vjp, CG to 1e-10 in float64, 1e-6
    otherwise), None where need (x, y, a, b) is False. Its own derivative (the second derivative of a
    loss of f, g) is not implemented: backward and jvp raise. x, y, a, b are inputs only so that a
    derivative with respect to them reaches this node. `vmap` (jacrev batches the cotangents) loops:
    one CG solve per cotangent."""

    @staticmethod
    def forward(grad_f: torch.Tensor | None, grad_g: torch.Tensor | None, x: torch.Tensor, y: torch.Tensor,
                a: torch.Tensor | None, b: torch.Tensor | None, solve: _Solve, need: tuple):
        dtype = (grad_f if grad_f is not None else grad_g).dtype
        implicit = solve.solver.potential_vjp(grad_f, grad_g, x=need[0], y=need[1], a=need[2], b=need[3],
                                              tol=1e-10 if dtype == torch.float64 else 1e-6)
        return implicit.grad_x, implicit.grad_y, implicit.grad_a, implicit.grad_b

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple, output: Any) -> None:
        ctx.set_materialize_grads(False)

    @staticmethod
    def backward(ctx: Any, *grad_outputs: Any):
        if all(g is None for g in grad_outputs):
            return (None,) * 8
        raise NotImplementedError(f"flashsinkhorn: {_POTENTIAL_LOSSES} are not implemented")

    @staticmethod
    def jvp(ctx: Any, *tangents: Any):
        raise NotImplementedError(f"flashsinkhorn: {_POTENTIAL_LOSSES} are not implemented")

    @staticmethod
    def vmap(info: Any, in_dims: tuple, grad_f: torch.Tensor | None, grad_g: torch.Tensor | None, x: torch.Tensor,
             y: torch.Tensor, a: torch.Tensor | None, b: torch.Tensor | None, solve: _Solve, need: tuple):
        points = _one_problem((x, y, a, b), in_dims[2:6])
        results = [_PotentialVjp.apply(_item(grad_f, in_dims[0], k), _item(grad_g, in_dims[1], k), *points, solve,
                                       need) for k in range(info.batch_size)]
        stacked = tuple(None if results[0][i] is None else torch.stack([r[i] for r in results]) for i in range(4))
        return stacked, tuple(None if t is None else 0 for t in stacked)


class _PointGradients(torch.autograd.Function):
    """(∇_X F, ∇_Y F) of the forward's solve (debiasing terms included), as functions of (x, y):
    for cotangents (A, B) the backward is x̄ = (H·(A, B))_x, ȳ = (H·(A, B))_y, and for tangents
    (Ẋ, Ẏ) the forward-mode tangent is H·(Ẋ, Ẏ) — the same joint HVP (_HessianProduct), H being
    symmetric. SinkhornFunction.backward scales them by grad_cost with ordinary torch operations, so
    c̄ = ⟨A, ∇_X F⟩ + ⟨B, ∇_Y F⟩ and its derivatives come from autograd. An output not asked for
    (want_x / want_y) is None. The weights are not inputs: SinkhornFunction adds their (refusing)
    dependence separately, so that a derivative in x, y alone runs here."""

    @staticmethod
    def forward(x: torch.Tensor, y: torch.Tensor, solve: _Solve, want_x: bool, want_y: bool):
        solver = solve.solver
        return solver.gradient_x() if want_x else None, solver.gradient_y() if want_y else None

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple, output: Any) -> None:
        x, y, solve, want_x, want_y = inputs
        ctx.solve, ctx.want = solve, (want_x, want_y)
        ctx.set_materialize_grads(False)
        ctx.save_for_backward(x, y)
        ctx.save_for_forward(x, y)

    @staticmethod
    def backward(ctx: Any, grad_x: torch.Tensor | None, grad_y: torch.Tensor | None):
        need = ctx.needs_input_grad
        if (grad_x is None and grad_y is None) or not (need[0] or need[1]):
            return (None,) * 5
        x, y = ctx.saved_tensors
        hx, hy = _HessianProduct.apply(grad_x, grad_y, ctx.solve, need[0], need[1])
        if torch.is_grad_enabled():  # H·(A, B) depends on x, y too: that (third) derivative must raise
            hx, hy = (_refusing(h, _THIRD, (x, y)) for h in (hx, hy))
        return hx, hy, None, None, None

    @staticmethod
    def vmap(info: Any, in_dims: tuple, x: torch.Tensor, y: torch.Tensor, solve: _Solve, want_x: bool,
             want_y: bool):
        return _PointGradients.apply(*_one_problem((x, y), in_dims[:2]), solve, want_x, want_y), (None, None)

    @staticmethod
    def jvp(ctx: Any, tangent_x: Any, tangent_y: Any, *_: Any):
        if tangent_x is None and tangent_y is None:
            return None, None
        x, y = ctx.saved_tensors
        hx, hy = _HessianProduct.apply(tangent_x, tangent_y, ctx.solve, *ctx.want)
        return tuple(_refusing(h, _THIRD, (x, y)) for h in (hx, hy))


class _HessianProduct(torch.autograd.Function):
    """H·(A, B) = (H_xx A + H_xy B, H_yx A + H_yy B) of the value at the forward's solve
    (`solve.hessian().product`), linear in the directions (A, B): its vector-Jacobian product for
    cotangents (U, V) is H·(U, V) (H symmetric) and its tangent along (Ȧ, Ḃ) is H·(Ȧ, Ḃ) — this same
    function again. A direction may be None (zero); an output not asked for (want_x / want_y) is
    None. `vmap` (jacrev, jacfwd, torch.func.hessian batch their directions) loops over the batch:
    one streamed product per direction."""

    @staticmethod
    def forward(direction_x: torch.Tensor | None, direction_y: torch.Tensor | None, solve: _Solve, want_x: bool,
                want_y: bool):
        return solve.hessian().product(direction_x, direction_y, want_x, want_y)

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple, output: Any) -> None:
        ctx.solve, ctx.want = inputs[2], inputs[3:5]
        ctx.set_materialize_grads(False)

    @staticmethod
    def backward(ctx: Any, grad_x: torch.Tensor | None, grad_y: torch.Tensor | None):
        need = ctx.needs_input_grad
        if (grad_x is None and grad_y is None) or not (need[0] or need[1]):
            return (None,) * 5
        return (*_HessianProduct.apply(grad_x, grad_y, ctx.solve, need[0], need[1]), None, None, None)

    @staticmethod
    def jvp(ctx: Any, tangent_x: Any, tangent_y: Any, *_: Any):
        if tangent_x is None and tangent_y is None:
            return None, None
        return _HessianProduct.apply(tangent_x, tangent_y, ctx.solve, *ctx.want)

    @staticmethod
    def vmap(info: Any, in_dims: tuple, direction_x: torch.Tensor | None, direction_y: torch.Tensor | None,
             solve: _Solve, want_x: bool, want_y: bool):
        products = [_HessianProduct.apply(_item(direction_x, in_dims[0], k), _item(direction_y, in_dims[1], k),
                                          solve, want_x, want_y) for k in range(info.batch_size)]
        stacked = tuple(None if products[0][i] is None else torch.stack([p[i] for p in products]) for i in range(2))
        return stacked, tuple(None if s is None else 0 for s in stacked)


class _NotTwiceDifferentiable(torch.autograd.Function):
    """Zero whose derivative raises NotImplementedError naming `what` (see _refusing). The tensors the
    missing derivative is with respect to ride along as inputs, so that a derivative with respect to
    them reaches this node and raises instead of being silently zero: in reverse mode when a
    cotangent arrives, in forward mode (jvp) when one of them carries a tangent. Its forward is a torch
    clone, so torch.func.vmap may run it batched (generate_vmap_rule)."""

    generate_vmap_rule = True

    @staticmethod
    def forward(zero: torch.Tensor, what: str, *inputs: torch.Tensor) -> torch.Tensor:
        return zero.clone()

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple, output: Any) -> None:
        ctx.what = inputs[1]

    @staticmethod
    def backward(ctx: Any, *grad_outputs: Any):
        raise NotImplementedError(f"flashsinkhorn: {ctx.what} are not implemented")

    @staticmethod
    def jvp(ctx: Any, _tangent_zero: Any, _what: Any, *tangents: Any):
        if any(t is not None for t in tangents):
            raise NotImplementedError(f"flashsinkhorn: {ctx.what} are not implemented")
        return None


def _tracked(t: Any) -> bool:
    """Whether a derivative may flow through t: it requires grad, is a torch.func wrapper (grad, jvp,
    vmap levels) or is a forward-mode dual tensor."""
    return isinstance(t, torch.Tensor) and (t.requires_grad or _transformed(t))


def _transformed(t: torch.Tensor) -> bool:
    """Whether t is a torch.func wrapper or a forward-mode dual tensor."""
    if torch._C._functorch.is_functorch_wrapped_tensor(t):
        return True
    return forward_ad._current_level >= 0 and forward_ad.unpack_dual(t).tangent is not None


def _refusing(value: torch.Tensor | None, what: str, depends_on: tuple) -> torch.Tensor | None:
    """value + 0, where the 0 depends on the tensors of `depends_on` through which derivatives flow and
    its derivative raises NotImplementedError naming `what`: a derivative of value with respect to one
    of them raises, one with respect to anything else runs as before (the engine never visits the
    zero's node; in forward mode its tangent is None unless one of them has one)."""
    inputs = [t for t in depends_on if _tracked(t)]
    if value is None or not inputs:
        return value
    return value + _NotTwiceDifferentiable.apply(torch.zeros_like(value), what, *inputs)


class _PlainSinkhornFunction(torch.autograd.Function):
    """SinkhornFunction in the forward(ctx, ...) form, for calls outside torch.func transforms and
    forward-mode AD (what a training loop does): torch binds a setup_context forward's arguments
    through inspect on every apply (_signature_computed_once), which this form skips — ~20 µs of a
    warm call's host time, more when the caches are cold. Same forward, context and backward
    (double backward included: SinkhornFunction.backward builds _PointGradients under create_graph);
    no jvp or vmap, which only transforms and dual tensors reach, and those take SinkhornFunction.
    On CUDA tensors read in place, the point gradients that will be needed are enqueued right after the
    solve (_Solve.start_gradients)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, y: torch.Tensor, a: torch.Tensor | None, b: torch.Tensor | None,
                solve: _Solve) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        output = SinkhornFunction.forward(x, y, a, b, solve)
        SinkhornFunction.setup_context(ctx, (x, y, a, b, solve), output)
        solve.start_gradients(*ctx.needs_input_grad[:2])
        return output

    backward = staticmethod(SinkhornFunction.backward)


def _signature_computed_once(*functions: type) -> None:
    """torch's Function.apply binds the arguments of a setup_context-style forward through
    inspect.signature(forward) on every call (torch.autograd.function._bind_default_args): with torch
    2.15 such an apply costs ~48 µs warm against ~8 µs for a forward(ctx, ...) Function, and inspect's
    code is large, so after a long solve it is cold too. inspect returns a function's __signature__
    when one is set: computing it once here halves that cost (~28 µs), and the binding is unchanged."""
    for function in functions:
        function.forward.__signature__ = inspect.signature(function.forward)


_signature_computed_once(SinkhornFunction, _PotentialVjp, _PointGradients, _HessianProduct, _NotTwiceDifferentiable)


def differentiable_sinkhorn(x: torch.Tensor, y: torch.Tensor, a: torch.Tensor | None, b: torch.Tensor | None,
                            kwargs: dict) -> SinkhornResult:
    """`sinkhorn()` with a differentiable `cost` (see SinkhornFunction): reverse mode, forward mode and
    torch.func transforms."""
    x, y, a, b = _tensor(x), _tensor(y), _tensor(a), _tensor(b)
    if not torch.is_grad_enabled() and not any(t is not None and _transformed(t) for t in (x, y, a, b)):
        return Solver(x, y, a, b, **kwargs).solve()
    solve = _Solve(kwargs)
    function = SinkhornFunction if _under_transform(x, y, a, b) else _PlainSinkhornFunction
    cost, f, g = function.apply(x, y, a, b, solve)
    result = solve.result  # metadata of the solve (its tensors are the plain ones below any transform)
    return SinkhornResult(f, g, cost, result.primal, result.iterations,
                          result.marginal_error, result.converged, result.eps, result.device, result.seconds,
                          result.solver, result.f_aa, result.g_bb)


def _tensor(value: Any) -> torch.Tensor | None:
    """A tensor for SinkhornFunction.apply (NumPy arrays and lists mixed with tensors become tensors)."""
    return value if value is None or isinstance(value, torch.Tensor) else torch.as_tensor(value)
