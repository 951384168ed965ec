"""Matrix-free second-order tools over θ ∈ R^p (the library's flashsinkhorn::optim, docs/optimizers.md):
`lanczos` (extreme eigenvalues of a symmetric operator: saddle detection), `newton` (truncated
Newton-CG with an Armijo line search and negative-curvature steps) and `trust_region` (Steihaug–Toint
CG). The operator, gradient and Hessian-vector product are Python callables on 1-d float64 arrays;
with `Solver.hvp` they give the OT value's curvature (`Solver.lambda_min`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from . import _core


@dataclass(slots=True)
class LanczosResult:
    """Ritz values θ_min ≥ λ_min(A) and θ_max ≤ λ_max(A) after `steps` products, the unit Ritz vector
    of θ_min, and the residual bounds ‖A y − θ y‖ of both."""

    lambda_min: float
    lambda_max: float
    ritz_vector_min: np.ndarray
    residual_min: float
    residual_max: float
    steps: int
    converged: bool


@dataclass(slots=True)
class OptimizeResult:
    """The last accepted θ, f(θ), ‖∇f(θ)‖, the status ('converged', 'max_iterations',
    'line_search_failed', 'trust_radius_too_small'), (values, gradients, hvps) evaluation counts and
    one (iteration, value, gradient_norm, cg_iterations, step_size, negative_curvature, trust_radius,
    accepted) tuple per iteration."""

    theta: np.ndarray
    value: float
    gradient_norm: float
    iterations: int
    status: str
    evaluations: tuple
    history: list


def lanczos(apply: Callable[[np.ndarray], Any], dimension: int, *, max_steps: int = 100, tol: float = 1e-10,
            smallest_only: bool = False, seed: int = 0) -> LanczosResult:
    """Extreme eigenvalues of the symmetric operator v ↦ apply(v) on R^dimension by Lanczos with full
    reorthogonalisation (one apply per step)."""
    return LanczosResult(**_core.lanczos_extremes(apply, int(dimension), int(max_steps), float(tol),
                                                  bool(smallest_only), int(seed)))


def newton(gradient: Callable[[np.ndarray], tuple], hvp: Callable[[np.ndarray, np.ndarray], Any], theta0: Any, *,
           value: Callable[[np.ndarray], float] | None = None, tol: float = 1e-8, iters: int = 200,
           cg_iters: int = 500) -> OptimizeResult:
    """Minimises f by truncated Newton-CG. gradient(θ) returns (f(θ), ∇f(θ)); hvp(θ, v) returns ∇²f(θ)·v;
    value(θ), when given, is used for line-search trials (else gradient is). Stops at ‖∇f‖ ≤ tol."""
    return OptimizeResult(**_core.newton_cg(value, gradient, hvp, _vector(theta0), float(tol), int(iters),
                                            int(cg_iters)))


def trust_region(gradient: Callable[[np.ndarray], tuple], hvp: Callable[[np.ndarray, np.ndarray], Any],
                 theta0: Any, *, value: Callable[[np.ndarray], float] | None = None, tol: float = 1e-8,
                 iters: int = 500, cg_iters: int = 500, radius: float = 1.0) -> OptimizeResult:
    """Minimises f by the Steihaug–Toint trust-region CG method (negative curvature → a step to the
    boundary), starting with trust radius `radius`. Callables as for `newton`."""
    return OptimizeResult(**_core.trust_region(value, gradient, hvp, _vector(theta0), float(tol), int(iters),
                                               int(cg_iters), float(radius)))


def _vector(theta: Any) -> list:
    return [float(v) for v in np.asarray(theta, dtype=np.float64).ravel()]
