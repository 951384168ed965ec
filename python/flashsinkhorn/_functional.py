"""Functional API: `Solver`, `sinkhorn`, `apply_plan`, `barycentric_map`.

Conventions (SPEC §1, docs/math.md): C_ij = s·‖x_i − y_j‖², P_ij = a_i b_j exp((f_i + g_j − C_ij)/ε),
value OT_ε = ⟨a, f⟩ + ⟨b, g⟩ (S_ε when debiased, the unbalanced dual value with a reach).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import _core
from ._arrays import (_CPU_TENSOR_FRAMES, _CUDA_TENSOR_FRAMES, _NUMPY_FRAMES, _RAW_STREAM, Array, Frame, _from_dlpack,
                      core_array, current_stream, device_address, host_array, is_tensor)
from ._arrays import torch as _torch
from ._labels import LabelCost
from ._options import options_for
from ._progress import ProgressArgument, with_progress


@dataclass(slots=True)
class SinkhornResult:
    """OT_ε(a, b) = min_P ⟨P, C⟩ + ε·KL(P ‖ a⊗b) = ⟨a, f⟩ + ⟨b, g⟩ at convergence, with its potentials.

    f, g are in the caller's framework (NumPy in → NumPy out; torch in → torch out on the input's
    device, in the input's dtype). With debias=True, f_aa (n,) and g_bb (m,) are the potentials of
    OT_ε(a, a) and OT_ε(b, b), in the same framework (GeomLoss's debiased potentials are f − f_aa,
    g − g_bb); None when not debiased. `cost` is a float for NumPy inputs and a 0-d tensor for torch
    inputs (differentiable with respect to x, y, a, b when they require grad). `solver` is the
    solved `Solver`, for plan products and gradients without a second solve.

    `primal_cost` = ⟨P, C⟩ and `relative_entropy` = KL(P ‖ a⊗b) = Σ P log(P/(a⊗b)) − ΣP + Σa·Σb (the
    generalised KL) describe the plan P_ij = m_i·softmax_j((g_j − C_ij)/ε + log b_j) (rows
    renormalised from g; m_i = a_i when balanced), computed in one streamed pass when first read
    (`primal`: a solve is the Sinkhorn loop alone; read them before solving the same Solver again).
    Balanced, weights normalised, converged: cost ≈ primal_cost + eps·relative_entropy. With
    debias=True both describe the plan of OT_ε(a, b).
    """

    f: Array = field(repr=False)
    g: Array = field(repr=False)
    cost: Any
    primal: "PrimalTerms" = field(repr=False)
    iterations: int
    marginal_error: float
    converged: bool
    eps: float
    device: str
    seconds: float
    solver: "Solver" = field(repr=False, default=None)
    f_aa: Array | None = field(repr=False, default=None)
    g_bb: Array | None = field(repr=False, default=None)

    @property
    def primal_cost(self) -> float:
        """⟨P, C⟩ (computed on first use, with relative_entropy: one streamed pass over the plan)."""
        return self.primal.values()[0]

    @property
    def relative_entropy(self) -> float:
        """KL(P ‖ a⊗b), generalised (computed on first use, with primal_cost)."""
        return self.primal.values()[1]


class PrimalTerms:
    """⟨P, C⟩ and KL(P ‖ a⊗b) of one solve's plan, computed when first asked for (the core's
    primal_objective: one streamed pass, as long as two to three half-steps on the GPU) and kept, so
    that a solve costs the Sinkhorn loop alone. Valid until its solver is solved again."""

    __slots__ = ("_solver", "_solve_count", "_values")

    def __init__(self, solver: "Solver") -> None:
        self._solver, self._solve_count, self._values = solver, solver._solve_count, None

    def values(self) -> tuple[float, float]:
        if self._values is None:
            if self._solver._solve_count != self._solve_count:
                raise RuntimeError("primal_cost / relative_entropy: the solver was solved again after this result; "
                                   "ask the newer result")
            self._values = tuple(self._solver._core.primal_objective())
        return self._values


class Solver:
    """P_ij = a_i b_j exp((f_i + g_j − C_ij)/ε), C_ij = s‖x_i − y_j‖²: a solve, then streamed products with P.

    Wraps flashsinkhorn::solver. Construction validates and prepares the clouds; `solve()` runs the
    Sinkhorn loop (a second call continues from the current potentials); the other methods need a
    solved instance and never form P. Every result is returned in the framework, dtype and device
    of `x`. Options are those of `sinkhorn()`.
    """

    _in_place = False  # CUDA tensors read in place on their GPU (_reads_in_place); set per instance
    _solve_count = 0  # solve() calls so far (a result's PrimalTerms belong to one of them)

    def __init__(self, x: Array, y: Array, a: Array | None = None, b: Array | None = None, *, eps: float,
                 cost_scale: float = 1.0, initial_f: Array | None = None, initial_g: Array | None = None,
                 cost: str = "sqeuclidean", solver: str = "alternating", scaling: float | None = None,
                 diameter: float | None = None, iters: int = 1000, tol: float = 1e-4, check_every: int = 10,
                 relaxation: float | str = 1.0,
                 reach: float | None = None, reach_x: float | None = None, reach_y: float | None = None,
                 debias: bool = False, precision: str | None = None, device: str = "auto", threads: int = 0,
                 normalize_weights: bool = True, labels: LabelCost | None = None,
                 progress: ProgressArgument = None) -> None:
        frame = Frame.of(x, y, a, b)
        self._frame, self._debias = frame, bool(debias)
        self._in_place = _reads_in_place(frame, device)
        self._core = _new_core(frame, x, y, a, b, eps, cost_scale, initial_f, initial_g, cost, solver, scaling, diameter,
                               iters, tol, check_every, relaxation, reach, reach_x, reach_y, debias, precision, device,
                               threads, normalize_weights, labels, progress)

    @property
    def device_name(self) -> str:
        return self._core.device_name

    def solve(self) -> SinkhornResult:
        """f_i ← −ε·LSE_j[(g_j − C_ij)/ε + log b_j], g_j ← −ε·LSE_i[(f_i − C_ij)/ε + log a_i] until the
        L1 marginal error ≤ tol (or the iteration cap). Returns the potentials and the value."""
        frame = self._frame
        self._solve_count += 1
        if self._in_place:
            return self._solve_on_device()
        return self._result(*self._core.solve_fields(frame.single, self._debias, frame.torch))

    def _solve_on_device(self) -> SinkhornResult:
        """solve() for CUDA tensors: the core writes the potentials and the value into tensors on their
        GPU (solve_into); only scalars come back."""
        frame, debias = self._frame, self._debias
        f, g, f_aa, g_bb, cost = _device_outputs(frame, self._n, self._m, debias)
        (iterations, marginal_error, converged, eps, device, seconds) = self._core.solve_into(
            device_address(f), device_address(g), None if f_aa is None else device_address(f_aa),
            None if g_bb is None else device_address(g_bb), device_address(cost))
        return SinkhornResult(f, g, cost, PrimalTerms(self), iterations, marginal_error, converged, eps,
                              device, seconds, self, f_aa, g_bb)

    def _result(self, cost, _primal_cost, _relative_entropy, iterations, marginal_error, converged, eps, device,
                seconds, f, g, f_aa, g_bb) -> SinkhornResult:
        """The fields of the core's solve_fields: the potentials already in the working dtype (float32
        rounded once in C++, no float64 intermediate array) as NumPy arrays, or for torch (dlpack=True)
        as host DLPack capsules with the cost as a 0-d one, which become tensors without a copy."""
        frame = self._frame
        if frame.torch:
            take = _from_dlpack if frame.on_host else frame.from_core
            cost, f, g = take(cost), take(f), take(g)
            if f_aa is not None:
                f_aa, g_bb = take(f_aa), take(g_bb)
        return SinkhornResult(f, g, cost, PrimalTerms(self), iterations, marginal_error, converged, eps,
                              device, seconds, self, f_aa, g_bb)

    def _matrix_product(self, method, values: Array, rows: int) -> Array:
        if not (isinstance(values, np.ndarray) or is_tensor(values)):
            values = np.asarray(values)
        vector = values.ndim == 1
        if vector:
            values = values.reshape(-1, 1)
        k = int(values.shape[1]) if values.ndim == 2 else 0
        out = self._frame.empty_host((rows, k))
        method(host_array(values, self._frame), out)
        out = self._frame.give_back(out)
        return out.reshape(-1) if vector else out

    @property
    def _n(self) -> int:
        return self._core.sizes[0]

    @property
    def _m(self) -> int:
        return self._core.sizes[1]

    @property
    def _d(self) -> int:
        return self._core.sizes[2]

    def apply_plan(self, v: Array) -> Array:
        """(P·V)_i = Σ_j P_ij V_j for V of shape (m, k) or (m,); returns (n, k) or (n,)."""
        return self._matrix_product(self._core.apply_plan, v, self._n)

    def apply_plan_transpose(self, u: Array) -> Array:
        """(Pᵀ·U)_j = Σ_i P_ij U_i for U of shape (n, k) or (n,); returns (m, k) or (m,)."""
        return self._matrix_product(self._core.apply_plan_transpose, u, self._m)

    def barycentric_projection(self) -> Array:
        """T(x_i) = Σ_j P_ij y_j / Σ_j P_ij, shape (n, d), in the coordinates of the input y."""
        out = self._frame.empty_host((self._n, self._d))
        self._core.barycentric_projection(out)
        return self._frame.give_back(out)

    def gradient_x(self) -> Array:
        """∇_{x_i} cost = 2s Σ_j P_ij (x_i − y_j) (envelope theorem; debias/cosine handled), shape (n, d)."""
        return self._point_gradient(self._core.gradient_x, self._n)

    def gradient_y(self) -> Array:
        """∇_{y_j} cost = 2s Σ_i P_ij (y_j − x_i), shape (m, d)."""
        return self._point_gradient(self._core.gradient_y, self._m)

    def _point_gradient(self, method, rows: int) -> Array:
        """A point gradient into a new array: for CUDA tensors a tensor on their GPU that the core writes
        in place, else a host array given back in the caller's framework."""
        frame = self._frame
        if self._in_place:
            out = frame.empty_device((rows, self._d))
            method(device_address(out))
            return out
        out = frame.empty_host((rows, self._d))
        method(out)
        return frame.give_back(out)

    def gradient_a(self) -> Array:
        """∂cost/∂a_k = (h_k − ⟨ã, h⟩)/Σa with h = T_f(g) (− f_aa when debiased), ã = a/Σa; h itself
        when normalize_weights=False. Balanced sides only (raises Unsupported with a reach)."""
        out = self._frame.empty_host((self._n,))
        self._core.gradient_a(out)
        return self._frame.give_back(out)

    def potential_vjp(self, df: Array | None, dg: Array | None, *, x: bool = True, y: bool = True,
                      a: bool = False, b: bool = False, tol: float = 1e-6, iters: int = 500,
                      preconditioner: str = "diagonal") -> PotentialVjp:
        """Implicit differentiation: given ḟ = ∂L/∂f (n,) and ġ = ∂L/∂g (m,) of a loss of this solve's
        potentials, returns ∂L/∂x, ∂L/∂y (and ∂L/∂a, ∂L/∂b when asked) through the optimality
        conditions of (f, g): conjugate gradients on the Schur complement of
        H = [[diag a, P], [Pᵀ, diag Pᵀ1]], every product a streamed plan pass. Only gauge-invariant
        losses (Σḟ = Σġ) have a derivative; the gauge component of other cotangents is removed
        (reported as gauge_defect). Balanced problems; non-convergence is reported, not raised."""
        if preconditioner not in _PRECONDITIONERS:
            raise ValueError(f"preconditioner must be 'diagonal', 'none' or 'sparse', got {preconditioner!r}")
        frame = self._frame
        n, m, d = self._n, self._m, self._d
        outs = [frame.empty_host(shape) if wanted else None
                for wanted, shape in ((x, (n, d)), (y, (m, d)), (a, (n,)), (b, (m,)))]
        cotangents = [None if v is None else host_array(v if isinstance(v, np.ndarray) or is_tensor(v)
                                                         else np.asarray(v), frame) for v in (df, dg)]
        report = self._core.potential_vjp(*cotangents, *outs, tol, iters, _PRECONDITIONERS[preconditioner])
        grads = [None if out is None else frame.give_back(out) for out in outs]
        return PotentialVjp(*grads, *report)

    _HVP_PARTS = {"full": 0, "fixed": 1, "implicit": 2}

    def hvp(self, direction: Array, *, wrt: str = "x", part: str = "full", tol: float = 1e-6, iters: int = 500,
            preconditioner: str = "diagonal") -> HessianVectorProduct:
        """H·A = d/dt ∇F(X + tA) of the converged value F (balanced, squared-Euclidean; wrt='y' for the
        points of y), exact and streamed: the frozen-potential part H_fix·A (part='fixed', indefinite)
        plus the potentials' response H_imp·A (part='implicit', PSD; one CG solve on the Schur
        complement of the potentials' system, every product a plan pass). See docs/math.md.
        wrt='self', on a solver of a symmetric problem (x, x, a, a): the Hessian of
        X ↦ OT_ε(a, X; a, X) (a Sinkhorn divergence's debiasing term), (H·(A, A))_x + (H·(A, A))_y,
        whose potentials' response solves the well-conditioned (diag a + P)·δ = ρ.
        preconditioner: 'diagonal' (diag(Pᵀ1), default), 'none', or 'sparse' — the Schur complement of
        the plan's 8 largest entries per row, a few CG iterations instead of hundreds at small ε (solved
        by an inner CG, on the GPU for CUDA inputs: docs/math.md)."""
        if wrt not in ("x", "y", "self"):
            raise ValueError(f"wrt must be 'x', 'y' or 'self', got {wrt!r}")
        if part not in self._HVP_PARTS:
            raise ValueError(f"part must be 'full', 'fixed' or 'implicit', got {part!r}")
        if preconditioner not in _PRECONDITIONERS:
            raise ValueError(f"preconditioner must be 'diagonal', 'none' or 'sparse', got {preconditioner!r}")
        frame = self._frame
        shape = (self._n if wrt == "x" else self._m, self._d)
        if not (isinstance(direction, np.ndarray) or is_tensor(direction)):
            direction = np.asarray(direction)
        # CUDA tensors read in place: the direction and the product stay on their GPU (solver.hpp).
        out = frame.empty_device(shape) if self._in_place else frame.empty_host(shape)
        read = core_array if self._in_place else host_array
        arguments = (read(direction, frame), device_address(out) if self._in_place else out, self._HVP_PARTS[part], tol,
                     iters, _PRECONDITIONERS[preconditioner])
        report = self._core.hvp_self(*arguments) if wrt == "self" else self._core.hvp(wrt == "y", *arguments)
        return HessianVectorProduct(out if self._in_place else frame.give_back(out), *report)

    def hvp_xy(self, dx: Array | None, dy: Array | None, *, x: bool = True, y: bool = True, part: str = "full",
               tol: float = 1e-6, iters: int = 500, preconditioner: str = "diagonal") -> JointHessianVectorProduct:
        """H·(A, B) = (H_xx A + H_xy B, H_yx A + H_yy B) = d/dt (∇_X F, ∇_Y F)(X + tA, Y + tB): the joint
        Hessian-vector product of the converged value with respect to both clouds, exact and streamed,
        with one CG solve for dC_ij = 2s (x_i − y_j)·(A_i − B_j) (docs/math.md). dx (n, d) and dy (m, d)
        are A and B (None: zero, not both); x / y choose the products computed (the other comes back
        None). `part`, `tol`, `iters`, `preconditioner` as in `hvp`. This is what torch's double
        backward through `sinkhorn` calls."""
        if dx is None and dy is None:
            raise ValueError("hvp_xy needs dx, dy or both (None is a zero direction)")
        if not (x or y):
            raise ValueError("hvp_xy: ask for at least one product (x=True or y=True)")
        if part not in self._HVP_PARTS:
            raise ValueError(f"part must be 'full', 'fixed' or 'implicit', got {part!r}")
        if preconditioner not in _PRECONDITIONERS:
            raise ValueError(f"preconditioner must be 'diagonal', 'none' or 'sparse', got {preconditioner!r}")
        frame = self._frame
        empty = frame.empty_device if self._in_place else frame.empty_host
        read = core_array if self._in_place else host_array
        outs = [empty((rows, self._d)) if wanted else None for wanted, rows in ((x, self._n), (y, self._m))]
        directions = [None if v is None else read(v if isinstance(v, np.ndarray) or is_tensor(v) else np.asarray(v),
                                                  frame) for v in (dx, dy)]
        core_outs = [None if out is None else (device_address(out) if self._in_place else out) for out in outs]
        report = self._core.hvp_xy(*directions, *core_outs, self._HVP_PARTS[part], tol, iters,
                                   _PRECONDITIONERS[preconditioner])
        products = (None if out is None else (out if self._in_place else frame.give_back(out)) for out in outs)
        return JointHessianVectorProduct(*products, *report)

    def lambda_min(self, *, wrt: str = "x", part: str = "full", max_steps: int = 50, tol: float = 1e-6,
                   hvp_tol: float = 1e-8, seed: int = 0):
        """λ_min and λ_max of the Hessian of the converged value with respect to the points of x (or y)
        by Lanczos on `hvp` (one HVP per step): a negative λ_min marks a saddle or a non-convex region.
        Returns a flashsinkhorn.LanczosResult (the Ritz vector is flattened, shape (n·d,))."""
        from ._optimize import lanczos

        rows = self._n if wrt == "x" else self._m

        def apply(v: np.ndarray) -> np.ndarray:
            product = self.hvp(v.reshape(rows, self._d), wrt=wrt, part=part, tol=hvp_tol).product
            return np.asarray(product, dtype=np.float64).ravel()

        return lanczos(apply, rows * self._d, max_steps=max_steps, tol=tol, seed=seed)

    def gradient_b(self) -> Array:
        """∂cost/∂b_k = (h_k − ⟨b̃, h⟩)/Σb with h = T_g(f) (− g_bb when debiased); h when not normalising."""
        out = self._frame.empty_host((self._m,))
        self._core.gradient_b(out)
        return self._frame.give_back(out)


@dataclass(slots=True)
class PotentialVjp:
    """∂L/∂x, ∂L/∂y, ∂L/∂a, ∂L/∂b of a loss L(f, g) of the potentials (None where not asked for),
    and what the conjugate-gradient solve did (docs/math.md, "Implicit differentiation").
    `redone_in_float64`: a single-precision solve whose sparse-preconditioned CG fell short of the
    tolerance (broke down, or ran through 50 iterations) was redone on float64 passes (iterations and
    plan_passes count both attempts); the later products of the same solve then run on float64 passes
    at once (the Solver keeps its float64 backend), and so does the first where the solved plan
    foresees the fall (≥ 9% of its rows single matches; FLASHSINKHORN_SHORTFALL_FORECAST=off tries
    single precision first)."""

    grad_x: Array | None
    grad_y: Array | None
    grad_a: Array | None
    grad_b: Array | None
    iterations: int
    relative_residual: float
    converged: bool
    gauge_defect: float
    plan_passes: int
    redone_in_float64: bool


@dataclass(slots=True)
class HessianVectorProduct:
    """H·A of the converged value with respect to the points of x (or y), and what its CG solve did
    (`redone_in_float64`: as in PotentialVjp)."""

    product: Array
    cg_iterations: int
    relative_residual: float
    converged: bool
    gauge_defect: float
    plan_passes: int
    redone_in_float64: bool


@dataclass(slots=True)
class JointHessianVectorProduct:
    """H_xx A + H_xy B (product_x) and H_yx A + H_yy B (product_y) of the converged value (None where not
    asked for), and what the one CG solve did."""

    product_x: Array | None
    product_y: Array | None
    cg_iterations: int
    relative_residual: float
    converged: bool
    gauge_defect: float
    plan_passes: int
    redone_in_float64: bool


def sinkhorn(x: Array, y: Array, a: Array | None = None, b: Array | None = None, *, eps: float,
             cost_scale: float = 1.0, cost: str = "sqeuclidean", solver: str = "alternating",
             scaling: float | None = None, diameter: float | None = None, iters: int = 1000, tol: float = 1e-4,
             check_every: int = 10, relaxation: float | str = 1.0, reach: float | None = None, reach_x: float | None = None,
             reach_y: float | None = None, debias: bool = False, precision: str | None = None, device: str = "auto", threads: int = 0,
             normalize_weights: bool = True, initial_f: Array | None = None,
             initial_g: Array | None = None, labels: LabelCost | None = None,
             progress: ProgressArgument = None) -> SinkhornResult:
    """OT_ε(a, b) = min_{P ∈ Π(a,b)} ⟨P, C⟩ + ε·KL(P ‖ a⊗b),  C_ij = s·‖x_i − y_j‖²  (s = cost_scale).

    Solved in the log domain by streaming Sinkhorn iterations (the n×m matrices are never formed):
      f_i ← −ε·LSE_j[(g_j − C_ij)/ε + log b_j],   g_j ← −ε·LSE_i[(f_i − C_ij)/ε + log a_i],
    so that P_ij = a_i b_j exp((f_i + g_j − C_ij)/ε) and the returned value is ⟨a, f⟩ + ⟨b, g⟩.

    Args:
      x, y: (n, d), (m, d) point clouds — NumPy arrays or torch tensors (CPU or CUDA), float32/float64.
      a, b: (n,), (m,) nonnegative weights; None is uniform. Divided by their sums unless
        normalize_weights=False (then balanced OT needs Σa = Σb).
      eps: the entropic temperature ε > 0 (the final one when ε-scaling is on).
      cost: 'sqeuclidean' or 'cosine' (1 − cos = ½‖x̂ − ŷ‖² on normalised rows; cost_scale ignored).
      solver: 'alternating' (f then g) or 'symmetric' (GeomLoss's averaged loop + final extrapolation).
      scaling: ε-scaling ratio in (0, 1): ε runs from diam² down to eps (GeomLoss's schedule).
      diameter: diam of the schedule (> 0); None: the diagonal of the joint bounding box of x and y.
      iters, tol, check_every: at most `iters` iterations after the schedule; stop when the L1 marginal
        error ≤ tol (tol = 0 runs all of them), checked every `check_every` iterations.
      relaxation: over-relaxation ω in (0, 2) of the alternating solver's iterations at the target eps,
        f ← (1−ω)f + ω·T_f(g), g ← (1−ω)g + ω·T_g(f); 1 is plain Sinkhorn. With scaling, ω ≈ 1.8–1.9
        cuts ill-conditioned solves (eps small against the costs) several- to tenfold; falls back to
        ω = 1 if a check's marginal error rises (options.hpp). Alternating solver only. 'auto': ω
        starts at 1.8 and follows the marginal error's rate, ω ← 2/(1 + √(1 − θ)) with θ the plain
        loop's rate read off the observed one (~2× fewer iterations than a fixed 1.8 where the error
        falls linearly; options.hpp, adaptive_relaxation).
      reach, reach_x, reach_y: unbalanced OT with KL penalty ρ = reach² (both sides, or one).
      debias: return the Sinkhorn divergence S_ε = OT_ε(a,b) − ½OT_ε(a,a) − ½OT_ε(b,b).
      precision: 'fp32', 'fp64', 'tf32', 'bf16'; None follows the input dtype (fp64 for float64).
      device: 'auto', 'cpu', 'cuda' or 'cuda:k'. CUDA tensors (float32/float64) are read in place on
        their GPU, in the order of the current stream; the potentials, the value and the x, y gradients
        stay there (only scalars reach the host). Copied through the host instead (once, explicitly):
        device='cpu', labels, and what the plan products, weight gradients and Hessian products read
        (solver.hpp, "CUDA inputs").
      threads: CPU threads (0: OpenMP's default).
      initial_f, initial_g: warm start (both or neither).
      labels: a LabelCost — the OTDD cost s·(λx‖x − y‖² + λy·W[l, l']) instead of s‖x − y‖².
      progress: a callable called with a flashsinkhorn.Progress (iteration, max_iterations, eps,
        marginal_error, elapsed_seconds, finished) at every convergence check (with scaling, also every
        check_every stages of the ε schedule, at that stage's ε) and once at the end; True
        prints a line per check to stderr; None (default) reports nothing. With a callback, Ctrl-C stops a
        long solve at its next check (KeyboardInterrupt), and whatever the callback raises ends the solve
        and reaches the caller.

    Returns:
      SinkhornResult; with torch inputs that require grad, `cost` is differentiable: first order
      (∇x, ∇y from the streamed envelope gradients, ∇a, ∇b on balanced sides) and second order in x
      and y (torch.autograd.grad(..., create_graph=True) then grad again runs the joint streamed HVP,
      Solver.hvp_xy: balanced, squared-Euclidean; with debias=True it is H_OT·(A, B) − ½(H_T_a·A, H_T_b·B)
      from plain replays of OT(a, b), OT(a, a), OT(b, b), solved at the first second derivative).

    Raises:
      flashsinkhorn.InvalidArgument (a ValueError) with the library's message for unusable input.
    """
    # Tensors that need no derivative, in the layout the core reads: the shortest path (about a
    # dozen Python-level calls fewer than the general one below; bench/python_call_overhead.py's
    # "floor" row is what no Python path can go below). CPU tensors take it only through
    # _torch_calls (C++): by Python it was slower than the DLPack path below (three CPU new_empty
    # and solve_into's host writes: +34 µs cold, +5 µs warm;
    # bench/results/python_path_ab_2026-12-01_s13_cpu_torch_by_address.json).
    # (x requiring grad — SamplesLoss's case — goes straight to the autograd Function, whose forward
    # comes back here with the detached inputs.)
    if type(x) is _TENSOR and not x.requires_grad and labels is None and initial_f is None and initial_g is None:
        frame = _tensor_call_frame(x, device)
        if frame is not None:
            options = options_for(cost, solver, scaling, diameter, iters, tol, check_every, relaxation, reach, reach_x,
                                  reach_y, debias, precision or ("fp32" if frame.single else "fp64"), device, threads,
                                  normalize_weights, frame.cuda_index)
            if progress is not None:
                options = with_progress(options, progress)
            result = _solve_plain_tensors(frame, x, y, a, b, float(eps), float(cost_scale), bool(debias), options)
            if result is not None:
                return result
    # float32/float64 NumPy clouds: Frame.of's first case without its call (a Python call costs ~10 µs
    # when the caches are cold after a long solve: bench/python_cold_floor_probe.py)
    frame = (_NUMPY_FRAMES.get(x.dtype) if type(x) is _NDARRAY and type(y) is _NDARRAY and
             (a is None or type(a) is _NDARRAY) and (b is None or type(b) is _NDARRAY) else None)
    if frame is None:
        frame = Frame.of(x, y, a, b)
    if frame.torch and (_requires_grad(x) or _requires_grad(y) or _requires_grad(a) or _requires_grad(b)
                        or _under_transform(x, y, a, b)):
        from ._autograd import differentiable_sinkhorn
        kwargs = dict(eps=eps, cost_scale=cost_scale, cost=cost, solver=solver, scaling=scaling, diameter=diameter,
                      iters=iters, tol=tol, check_every=check_every, relaxation=relaxation, reach=reach, reach_x=reach_x, reach_y=reach_y,
                      debias=debias, precision=precision, device=device, threads=threads,
                      normalize_weights=normalize_weights, initial_f=initial_f, initial_g=initial_g, labels=labels,
                      progress=progress)
        return differentiable_sinkhorn(x, y, a, b, kwargs)
    # Solver(...).solve(), without binding the keyword arguments a second time: every Python-level call
    # on this path costs microseconds when the interpreter's caches are cold after a long solve
    # (bench/python_call_overhead.py), so the common cases take one binding call and no helper:
    # new_solved for host inputs, new_solved_into for CUDA tensors read in place.
    s = Solver.__new__(Solver)
    s._frame, s._debias = frame, bool(debias)
    options = options_for(cost, solver, scaling, diameter, iters, tol, check_every, relaxation, reach, reach_x, reach_y,
                          debias, precision or ("fp32" if frame.single else "fp64"), device, threads, normalize_weights,
                          frame.cuda_index)
    if progress is not None:
        options = with_progress(options, progress)
    if frame.on_host and labels is None:
        if frame.torch:
            x, y, a, b = host_array(x, frame), host_array(y, frame), host_array(a, frame), host_array(b, frame)
            if initial_f is not None or initial_g is not None:
                initial_f, initial_g = host_array(initial_f, frame), host_array(initial_g, frame)
        (s._core, cost, _, _, iterations, marginal_error, converged, eps, device, seconds, f, g, f_aa,
         g_bb) = _core.new_solved(x, y, a, b, float(eps), float(cost_scale), initial_f, initial_g, options,
                                  frame.single, s._debias, frame.torch)
        s._solve_count = 1
        if frame.torch:
            cost, f, g = _from_dlpack(cost), _from_dlpack(f), _from_dlpack(g)
            if f_aa is not None:
                f_aa, g_bb = _from_dlpack(f_aa), _from_dlpack(g_bb)
        return SinkhornResult(f, g, cost, PrimalTerms(s), iterations, marginal_error, converged, eps, device, seconds, s,
                              f_aa, g_bb)
    s._in_place = _reads_in_place(frame, device)
    if s._in_place and labels is None and getattr(x, "ndim", 0) == 2 and getattr(y, "ndim", 0) == 2:
        # CUDA tensors read in place: the potentials and the value written into tensors made here, on
        # their GPU, in the order of the current stream (new_solved_into: construction and solve_into).
        f, g, value, f_aa, g_bb, fields = _solved_into(frame, x, y, a, b, float(eps), float(cost_scale), initial_f,
                                                       initial_g, s._debias, options, core_array)
        (s._core, iterations, marginal_error, converged, eps, device, seconds) = fields
        s._solve_count = 1
        return SinkhornResult(f, g, value, PrimalTerms(s), iterations, marginal_error, converged, eps, device, seconds,
                              s, f_aa, g_bb)
    core = s._core = _new_core(frame, x, y, a, b, eps, cost_scale, initial_f, initial_g, cost, solver, scaling, diameter,
                               iters, tol, check_every, relaxation, reach, reach_x, reach_y, debias, precision, device,
                               threads, normalize_weights, labels, progress)
    if s._in_place:
        return s._solve_on_device()
    return s._result(*core.solve_fields(frame.single, s._debias, frame.torch))


def _tensor_call_frame(x: Any, device: Any) -> Frame | None:
    """The frame of a tensor x for the short path (_solve_plain_tensors), None where only the general
    path serves: x of another dtype than its frame's (float16: converted there), a torch.func
    transform or forward-mode level active; for a CUDA tensor also no frame yet (the general path
    makes it on the first call), a core without CUDA or device='cpu'; for a CPU tensor no
    _torch_calls (its Python form was slower than the general path on the host)."""
    if x.is_cuda:
        frame = _CUDA_TENSOR_FRAMES.get((x.dtype, x.get_device()))
        if (frame is None or not _CORE_HAS_CUDA or _RAW_STREAM is None
                or (device != "auto" and str(device) == "cpu")):
            return None
    else:
        frame = _CPU_TENSOR_FRAMES.get(x.dtype) if _TORCH_CALLS is not None else None
        if frame is None:
            return None
    if frame.dtype is not x.dtype or _functorch_active() or _forward_ad._current_level >= 0:
        return None
    return frame


def _plain_like(t: Any, frame: Frame) -> bool:
    """t is a tensor _solve_plain_tensors can pass by address beside the frame's x: of its dtype and GPU,
    C-contiguous, without the negative bit, not requiring grad. The numbers of dimensions are the
    core's to check (the address carries the shape)."""
    return (type(t) is _TENSOR and t.dtype is frame.dtype and not t.requires_grad and t.get_device() == frame.cuda_index
            and t.is_contiguous() and not t.is_neg())


def solve_plain(x: Any, y: Any, a: Any, b: Any, kwargs: dict) -> SinkhornResult:
    """Solver(x, y, a, b, **kwargs).solve() for inputs that need no derivative (`kwargs`: sinkhorn()'s
    keyword arguments): the autograd Function's forward, whose inputs are detached. Outside torch.func
    transforms and forward-mode levels that is sinkhorn() itself, whose plain paths make one binding
    call (the CUDA short path, new_solved on the host); inside them, where sinkhorn() would route back
    to the Function, the Solver path."""
    if _functorch_active() or _forward_ad._current_level >= 0:
        return Solver(x, y, a, b, **kwargs).solve()
    return sinkhorn(x, y, a, b, **kwargs)


def _solve_plain_tensors(frame: Frame, x: Any, y: Any, a: Any, b: Any, eps: float, cost_scale: float, debias: bool,
                         options: Any) -> SinkhornResult | None:
    """sinkhorn() on tensors of the frame's dtype and device (one GPU, or the CPU), C-contiguous,
    without the negative bit, none requiring grad (None for any others: the general path serves
    them): outputs made on their device, every tensor passed by address (python/bindings/arrays.hpp),
    construction and solve in one call into the core (new_solved_into), on a GPU in the order of the
    current stream. With flashsinkhorn._torch_calls (built against this torch) the checks, the
    outputs and the stream are C++ calls on at::Tensor and the core is called through its C entry
    (_core._solve_into_entry, no Python object per tensor); else (CUDA tensors only) they are torch
    calls from here (about twenty) and new_solved_into takes device-address tuples."""
    if _TORCH_CALLS is not None:
        made = _TORCH_CALLS.solve_plain(x, y, a, b, eps, cost_scale, options, debias)
        if made is None:
            return None
        f, g, value, f_aa, g_bb, fields = made
    elif frame.on_host:
        return None
    else:
        if (x.requires_grad or not x.is_contiguous() or x.is_neg() or not _plain_like(y, frame)
                or (a is not None and not _plain_like(a, frame)) or (b is not None and not _plain_like(b, frame))):
            return None
        f, g, value, f_aa, g_bb, fields = _solved_into(frame, x, y, a, b, eps, cost_scale, None, None, debias, options,
                                                       _by_address)
    s = Solver.__new__(Solver)
    s._frame, s._debias, s._in_place, s._solve_count = frame, debias, not frame.on_host, 1
    (s._core, iterations, marginal_error, converged, eps, device, seconds) = fields
    return SinkhornResult(f, g, value, PrimalTerms(s), iterations, marginal_error, converged, eps, device, seconds, s,
                          f_aa, g_bb)


def _solved_into(frame: Frame, x: Any, y: Any, a: Any, b: Any, eps: float, cost_scale: float, initial_f: Any,
                 initial_g: Any, debias: bool, options: Any, read) -> tuple:
    """new_solved_into on a CUDA frame's arrays, each passed as read(array, frame) gives it (core_array;
    _by_address for tensors already checked), with outputs made on their GPU (_device_outputs) and
    passed by device address: (f, g, value, f_aa, g_bb, new_solved_into's fields). The Python form of
    _torch_calls.solve_plain on CUDA tensors."""
    n, m = x.shape[0] if len(x.shape) else 0, y.shape[0] if len(y.shape) else 0  # a 0-d cloud: the core names it
    f, g, f_aa, g_bb, value = _device_outputs(frame, n, m, debias, x)
    fields = _core.new_solved_into(
        read(x, frame), read(y, frame), None if a is None else read(a, frame), None if b is None else read(b, frame),
        eps, cost_scale, None if initial_f is None else read(initial_f, frame),
        None if initial_g is None else read(initial_g, frame), options, current_stream(frame), device_address(f),
        device_address(g), None if f_aa is None else device_address(f_aa),
        None if g_bb is None else device_address(g_bb), device_address(value))
    return f, g, value, f_aa, g_bb, fields


def _by_address(tensor: Any, frame: Frame) -> tuple:
    """The device address of a tensor _solve_plain_tensors has checked (core_array's first case without
    its checks)."""
    return device_address(tensor)


def _device_outputs(frame: Frame, n: int, m: int, debias: bool, like: Any = None) -> tuple:
    """(f, g, f_aa, g_bb, cost): the tensors on the frame's GPU that solve_into writes (f_aa, g_bb None
    unless debiased; cost 0-d). `like`: a tensor of the frame's dtype and device whose new_empty makes
    them — about half the host time of torch.empty with dtype and device keywords."""
    if like is not None and type(like) is _torch.Tensor and like.dtype is frame.dtype:
        empty = like.new_empty
    else:
        empty = frame.empty_device
    if debias:
        return empty(n), empty(m), empty(n), empty(m), empty(())
    return empty(n), empty(m), None, None, empty(())


def _new_core(frame, x, y, a, b, eps, cost_scale, initial_f, initial_g, cost, solver, scaling, diameter, iters, tol,
              check_every, relaxation, reach, reach_x, reach_y, debias, precision, device, threads, normalize_weights,
              labels=None, progress: ProgressArgument = None) -> "_core.Solver":
    """The core solver: NumPy arrays and array-likes go as they are (the binding reads NumPy in place and
    converts the rest), CPU tensors as host DLPack capsules, CUDA tensors as CUDA DLPack capsules with
    the current stream (core_array), the options from the cache."""
    if precision is None:  # the arithmetic follows the data, as in GeomLoss
        precision = "fp32" if frame.single else "fp64"
    options = options_for(cost, solver, scaling, diameter, iters, tol, check_every, relaxation, reach, reach_x, reach_y,
                          debias, precision, device, threads, normalize_weights, frame.cuda_index)
    if progress is not None:
        options = with_progress(options, progress)
    in_place = _reads_in_place(frame, device)
    if frame.torch:
        read = core_array if in_place else host_array
        x, y, a, b = read(x, frame), read(y, frame), read(a, frame), read(b, frame)
        initial_f, initial_g = read(initial_f, frame), read(initial_g, frame)
    if in_place:
        return _core.new_solver(x, y, a, b, float(eps), float(cost_scale), initial_f, initial_g, options,
                                None if labels is None else labels.core_arguments(), current_stream(frame))
    if labels is not None:
        return _core.new_solver(x, y, a, b, float(eps), float(cost_scale), initial_f, initial_g, options,
                                labels.core_arguments())
    return _core.new_solver(x, y, a, b, float(eps), float(cost_scale), initial_f, initial_g, options)


def _reads_in_place(frame: Frame, device: Any) -> bool:
    """Whether the core reads this call's tensors in place on their GPU (solver.hpp, "CUDA inputs"):
    CUDA tensors, a build of the core with CUDA, and a device other than 'cpu'. Otherwise CUDA tensors
    are copied to the host for the call and the results moved back (a build without CUDA, or
    device='cpu')."""
    return not frame.on_host and _core_has_cuda() and str(device) != "cpu"


def _core_has_cuda() -> bool:
    global _CORE_HAS_CUDA
    if _CORE_HAS_CUDA is None:
        _CORE_HAS_CUDA = bool(_core.cuda_available())
    return _CORE_HAS_CUDA


_CORE_HAS_CUDA = None
_NDARRAY = np.ndarray
_TENSOR = None if _torch is None else _torch.Tensor


def _torch_calls() -> Any:
    """flashsinkhorn._torch_calls when it was built against the torch loaded here and the environment
    does not turn it off (FLASHSINKHORN_TORCH_CALLS=0: the Python short path), else None."""
    if _torch is None or os.environ.get("FLASHSINKHORN_TORCH_CALLS") == "0":
        return None
    try:
        from . import _torch_calls as module
    except ImportError:  # not built (no torch with CUDA at build time), or built for another torch
        return None
    return module


_TORCH_CALLS = _torch_calls()


def _requires_grad(value: Any) -> bool:
    return value is not None and is_tensor(value) and value.requires_grad


def _under_transform(*values: Any) -> bool:
    """Whether a torch.func transform is active or one of `values` is a forward-mode dual tensor:
    their wrappers and dual tensors do not require grad, yet their derivatives (and batching) must go
    through the autograd.Function. One check per call, not per tensor (~0.1 µs)."""
    if _functorch_active():
        return True
    return _forward_ad._current_level >= 0 and any(
        is_tensor(v) and _forward_ad.unpack_dual(v).tangent is not None for v in values)


_functorch_active = None if _torch is None else _torch._C._are_functorch_transforms_active

# The CG preconditioners of potential_vjp / hvp / hvp_xy as the binding takes them (module.cpp,
# preconditioner_of): 'sparse' is the Schur complement of the plan's 8 largest entries per row
# (core/sparse_plan_preconditioner.hpp on the CPU, cuda/sparse_schur.hpp on the GPU).
_PRECONDITIONERS = {"none": 0, "diagonal": 1, "sparse": 2}
_forward_ad = None if _torch is None else _torch.autograd.forward_ad


def apply_plan(x: Array, y: Array, v: Array, a: Array | None = None, b: Array | None = None, *,
               transpose: bool = False, **kwargs: Any) -> Array:
    """(P·V)_i = Σ_j P_ij V_j  (or (Pᵀ·U)_j = Σ_i P_ij U_i with transpose=True), P the solved plan.

    Solves with `sinkhorn`'s keyword arguments, then streams the product. To apply several V to one
    plan, keep `sinkhorn(...).solver` and call its `apply_plan` instead.
    """
    s = Solver(x, y, a, b, **kwargs)
    s.solve()
    return s.apply_plan_transpose(v) if transpose else s.apply_plan(v)


def barycentric_map(x: Array, y: Array, a: Array | None = None, b: Array | None = None,
                    **kwargs: Any) -> Array:
    """T(x_i) = Σ_j P_ij y_j / Σ_j P_ij — where the solved plan sends x_i, shape (n, d).

    Solves with `sinkhorn`'s keyword arguments, then streams one pass over y.
    """
    s = Solver(x, y, a, b, **kwargs)
    s.solve()
    return s.barycentric_projection()
