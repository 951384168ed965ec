"""Matrix-free second-order tools over θ ∈ R^p (the library's flashsinkhorn::optim, docs/optimizers.md):
`lanczos` (extreme eigenvalues of a symmetric operator: saddle detection), `newton` (truncated
Newton-CG with an Armijo line search and negative-curvature steps), `trust_region` (Steihaug–Toint
CG), `adam`, and `hybrid` (Adam while λ_min(∇²f) ≤ 0, then the trust region or Newton-CG). The
operator, gradient and Hessian-vector product are Python callables on 1-d float64 arrays; with
`Solver.hvp` they give the OT value's curvature (`Solver.lambda_min`)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, NamedTuple

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
class AdamState:
    """Adam's state after `steps` steps: the moments m (`first`) and v (`second`). `adam(...,
    state=s)` continues the run that ended with s as if it had not stopped (a run cut by its
    wall-time budget, continued in another process: `to_dict` / `from_dict` for JSON)."""

    first: np.ndarray
    second: np.ndarray
    steps: int

    def to_dict(self) -> dict:
        return dict(first=np.asarray(self.first).tolist(), second=np.asarray(self.second).tolist(), steps=self.steps)

    @classmethod
    def from_dict(cls, d: dict) -> "AdamState":
        return cls(np.asarray(d["first"], dtype=np.float64), np.asarray(d["second"], dtype=np.float64), int(d["steps"]))


@dataclass(slots=True)
class HybridState:
    """Where a `hybrid` run stopped: Adam's state, the last λ_min check's Ritz vector (the next warm
    start), the checks made, the Adam steps before the switch (−1: none yet) and, after it, the trust
    radius reached; the Adam step of the last check (−1: none, the next is due at once).
    `hybrid(..., resume=s)` continues that run (to_dict / from_dict for JSON).

    `HybridState.after_adam(s)` starts a hybrid from an `adam` run's state s: no check made yet. With a
    gradient gate that no step of that Adam run met, it is the state the hybrid would have reached,
    since gated it makes Adam's steps exactly until its first check."""

    adam: AdamState
    ritz_vector: np.ndarray
    checks: int
    switch_iteration: int
    trust_radius: float
    last_check: int = -1

    def to_dict(self) -> dict:
        return dict(adam=self.adam.to_dict(), ritz_vector=np.asarray(self.ritz_vector).tolist(), checks=self.checks,
                    switch_iteration=self.switch_iteration, trust_radius=self.trust_radius,
                    last_check=self.last_check)

    @classmethod
    def from_dict(cls, d: dict) -> "HybridState":
        return cls(AdamState.from_dict(d["adam"]), np.asarray(d["ritz_vector"], dtype=np.float64), int(d["checks"]),
                   int(d["switch_iteration"]), float(d["trust_radius"]), int(d.get("last_check", -1)))

    @classmethod
    def after_adam(cls, adam: AdamState) -> "HybridState":
        return cls(adam, np.zeros(0), 0, -1, 0.0, -1)


@dataclass(slots=True)
class OptimizeResult:
    """The last accepted θ, f(θ), ‖∇f(θ)‖, the status ('converged', 'max_iterations',
    'line_search_failed', 'trust_radius_too_small', 'time_limit', 'stopped': a callback raised
    flashsinkhorn.StopOptimization and the iteration in flight was dropped), (values, gradients, hvps)
    evaluation counts and one (iteration, value, gradient_norm, cg_iterations, step_size,
    negative_curvature, trust_radius, accepted) tuple per iteration; the trust region's radius for a
    next iteration (`trust_region(..., radius=r.trust_radius)` continues it; 0 for the other
    methods) and, from `adam`, the AdamState to continue from."""

    theta: np.ndarray
    value: float
    gradient_norm: float
    iterations: int
    status: str
    evaluations: tuple
    history: list
    trust_radius: float = 0.0
    state: AdamState | None = None


class LambdaSample(NamedTuple):
    """One λ_min check of `hybrid`: after `iteration` Adam steps, the Ritz value θ_min ≥ λ_min(∇²f),
    its residual bound, the Lanczos steps (Hessian-vector products) it cost, whether Lanczos met its
    tolerance, and whether it stopped early below −negative_tol (λ_min < −negative_tol certain)."""

    iteration: int
    lambda_min: float
    residual: float
    lanczos_steps: int
    converged: bool
    certified_negative: bool


@dataclass(slots=True)
class HybridResult:
    """Where `hybrid` ended (theta, value, gradient_norm and status of its last phase), the Adam steps
    made before the switch (−1: no switch), one LambdaSample per λ_min check, each phase's
    OptimizeResult (`second_order` None without a switch) and the (values, gradients, hvps) counts of
    both phases and every Lanczos run."""

    theta: np.ndarray
    value: float
    gradient_norm: float
    status: str
    switch_iteration: int
    lambda_trace: list
    adam: OptimizeResult
    second_order: OptimizeResult | None
    evaluations: tuple
    state: HybridState | None = None


def lanczos(apply: Callable[[np.ndarray], Any], dimension: int, *, max_steps: int = 100, tol: float = 1e-10,
            smallest_only: bool = False, seed: int = 0) -> LanczosResult:
    """Extreme eigenvalues of the symmetric operator v ↦ apply(v) on R^dimension by Lanczos with full
    reorthogonalisation (one apply per step)."""
    return LanczosResult(**_core.lanczos_extremes(apply, int(dimension), int(max_steps), float(tol),
                                                  bool(smallest_only), int(seed)))


def newton(gradient: Callable[[np.ndarray], tuple], hvp: Callable[[np.ndarray, np.ndarray], Any], theta0: Any, *,
           value: Callable[[np.ndarray], float] | None = None, tol: float = 1e-8, iters: int = 200,
           cg_iters: int = 500, max_seconds: float | None = None) -> OptimizeResult:
    """Minimises f by truncated Newton-CG. gradient(θ) returns (f(θ), ∇f(θ)); hvp(θ, v) returns ∇²f(θ)·v;
    value(θ), when given, is used for line-search trials (else gradient is). Stops at ‖∇f‖ ≤ tol, after
    `iters` iterations, or once `max_seconds` of wall time are spent (status 'time_limit'; checked between
    iterations: the one under way finishes)."""
    return OptimizeResult(**_core.newton_cg(value, gradient, hvp, _vector(theta0), float(tol), int(iters),
                                            int(cg_iters), _or_infinity(max_seconds)))


def trust_region(gradient: Callable[[np.ndarray], tuple], hvp: Callable[[np.ndarray, np.ndarray], Any],
                 theta0: Any, *, value: Callable[[np.ndarray], float] | None = None, tol: float = 1e-8,
                 iters: int = 500, cg_iters: int = 500, radius: float = 1.0,
                 max_seconds: float | None = None, dense_model_dimension: int = 0) -> OptimizeResult:
    """Minimises f by the Steihaug–Toint trust-region CG method (negative curvature → a step to the
    boundary), starting with trust radius `radius`. Callables and stopping rules as for `newton`.

    With p = len(theta0) ≤ `dense_model_dimension`, each iterate's Hessian is formed instead by p
    products, H e_i, and the subproblem min gᵀs + ½sᵀHs over ‖s‖ ≤ Δ solved exactly (Moré–Sorensen
    in H's eigenbasis; a rejected step reuses H): for few parameters and dear products. The history's
    cg_iterations then counts the products each iteration made (p, or 0 after a rejection)."""
    return OptimizeResult(**_core.trust_region(value, gradient, hvp, _vector(theta0), float(tol), int(iters),
                                               int(cg_iters), float(radius), _or_infinity(max_seconds),
                                               int(dense_model_dimension)))


def adam(gradient: Callable[[np.ndarray], tuple], theta0: Any, *, lr: float = 1e-3, beta1: float = 0.9,
         beta2: float = 0.999, adam_eps: float = 1e-8, tol: float = 1e-8, iters: int = 1000,
         max_seconds: float | None = None, state: AdamState | None = None) -> OptimizeResult:
    """Minimises f by Adam (bias-corrected: θ ← θ − lr·m̂/(√v̂ + adam_eps)) for at most `iters` steps, until
    ‖∇f‖ ≤ tol, or until `max_seconds` of wall time are spent (status 'time_limit'). gradient(θ) returns
    (f(θ), ∇f(θ)); one call per step. The Adam of `hybrid`. A gradient call that raises
    flashsinkhorn.StopOptimization ends the run at the last completed step (status 'stopped', its
    state as it was then: a continuation makes that step again).

    `state` (a previous result's `.state`, with theta0 = its `.theta`) continues that run: step
    numbers go on, and `iters` bounds the steps of both runs together."""
    first, second, steps = ([], [], 0) if state is None else (_vector(state.first), _vector(state.second), int(state.steps))
    r = _core.adam(gradient, _vector(theta0), float(lr), float(beta1), float(beta2), float(adam_eps), float(tol),
                   int(iters), _or_infinity(max_seconds), first, second, steps)
    r["state"] = AdamState(r["state"]["first"], r["state"]["second"], r["state"]["steps"])
    return OptimizeResult(**r)


def hybrid(gradient: Callable[[np.ndarray], tuple], hvp: Callable[[np.ndarray, np.ndarray], Any], theta0: Any, *,
           value: Callable[[np.ndarray], float] | None = None, lr: float = 1e-3, beta1: float = 0.9,
           beta2: float = 0.999, adam_iters: int = 1000, adam_tol: float = 1e-8, check_every: int = 10,
           check_gradient_norm: float | None = None, negative_tol: float = 1e-6, switch_threshold: float = 0.0,
           second_order: str = "trust_region", tol: float = 1e-8, iters: int | None = None, cg_iters: int = 500,
           radius: float = 1.0, forcing_max: float = 0.9, lanczos_steps: int = 50, lanczos_tol: float = 1e-4,
           warm_lanczos: bool = True, seed: int = 0, max_seconds: float | None = None,
           resume: HybridState | None = None, dense_model_dimension: int = 0,
           check_at_start: bool = False) -> HybridResult:
    """Adam while the Hessian has negative curvature, a second-order method once it is positive definite.

    Policy (flashsinkhorn::optim::hybrid, docs/optimizers.md): at θ_0 and after every `check_every`
    Adam steps, Lanczos on hvp estimates λ_min(∇²f(θ)) (at most `lanczos_steps` products, residual
    ≤ lanczos_tol·max|θ|, stopped early once a Ritz value is below −negative_tol: then λ_min < 0 is
    certain); with `check_gradient_norm` (None: no gate) only where ‖∇f(θ)‖ ≤ it — the first check at the
    first step inside the gate, the next ones check_every steps after the last, Adam alone until then
    (a check far from a stationary point can cost more than the Adam steps it could save);
    `check_at_start` adds a check at θ_0 whatever the gate (the starting curvature on record; the next
    check is then due check_every steps on), which a continuation past step 0 never makes.
    Adam continues while λ_min ≤ switch_threshold; once a converged estimate has
    θ_min − residual > switch_threshold, `second_order` ('trust_region', Steihaug–Toint CG with
    initial radius `radius`, or 'newton', Newton-CG) runs from there until ‖∇f‖ ≤ tol or `iters`
    iterations (None: that method's default, 500 / 200), each inner CG at most `cg_iters` products and
    stopped at ‖Hs + g‖ ≤ η_k‖g‖ with Eisenstat–Walker's η_k ≤ `forcing_max` (0.9; a small value asks
    for near-exact Newton steps).
    If Adam reaches ‖∇f‖ ≤ adam_tol first or runs out of `adam_iters` steps, the run ends there (the
    last λ_min sample tells whether that point is a minimum). The first Lanczos run starts from a
    random vector (seed); with `warm_lanczos` each later one from the last Ritz vector plus a 1e-2
    random part (one product usually certifies a negative check), else from a fresh random vector
    (seed + check index). `max_seconds` bounds the whole run's wall time (the second-order
    phase gets what is left): a run it stops has status 'time_limit' and keeps its λ_min trace. A
    callback that raises flashsinkhorn.StopOptimization ends the run at once with status 'stopped':
    the Adam step, λ_min check or second-order iteration in flight is dropped (the state is as it was
    before it), so that `resume` goes on as if the run had not been interrupted.

    Callables as for `newton`: gradient(θ) returns (f(θ), ∇f(θ)); hvp(θ, v) returns ∇²f(θ)·v and is
    called only at a θ where gradient was last evaluated or an earlier accepted iterate; value(θ),
    when given, serves the second-order method's trial points. Bad options raise
    flashsinkhorn.InvalidArgument naming the field.

    `resume` (a previous result's `.state`, with theta0 = its `.theta`) continues that run: the
    same Adam moments and step count (`adam_iters` bounds both runs together), the λ_min check
    schedule and warm start; after the switch, the second-order method from theta0 with the trust
    radius it had reached.

    `dense_model_dimension` (with the trust region; see `trust_region`): with p ≤ it, a λ_min check
    stops after one or two Lanczos products when they already certify λ_min < −negative_tol, and
    otherwise forms ∇²f(θ) in the basis they began (p products in all) and reads its exact λ_min
    (residual 0, lanczos_steps p); the check that decides the switch hands that Hessian to the trust
    region, whose first step then makes no product. For few parameters and dear products."""
    s = resume
    r = _core.hybrid(value, gradient, hvp, _vector(theta0), float(lr), float(beta1), float(beta2), int(adam_iters),
                     float(adam_tol), int(check_every), _or_infinity(check_gradient_norm), float(negative_tol),
                     float(switch_threshold), str(second_order),
                     float(tol), None if iters is None else int(iters), int(cg_iters), float(radius),
                     float(forcing_max), int(lanczos_steps),
                     float(lanczos_tol), bool(warm_lanczos), int(seed), _or_infinity(max_seconds),
                     [] if s is None else _vector(s.adam.first), [] if s is None else _vector(s.adam.second),
                     0 if s is None else int(s.adam.steps), [] if s is None else _vector(s.ritz_vector),
                     0 if s is None else int(s.checks), -1 if s is None else int(s.last_check),
                     -1 if s is None else int(s.switch_iteration),
                     0.0 if s is None else float(s.trust_radius), int(dense_model_dimension), bool(check_at_start))
    state = r["state"]
    r["state"] = HybridState(AdamState(state["adam"]["first"], state["adam"]["second"], state["adam"]["steps"]),
                             state["ritz_vector"], state["checks"], state["switch_iteration"], state["trust_radius"],
                             state["last_check"])
    r["lambda_trace"] = [LambdaSample(*sample) for sample in r["lambda_trace"]]
    r["adam"] = OptimizeResult(**r["adam"])
    r["second_order"] = None if r["second_order"] is None else OptimizeResult(**r["second_order"])
    return HybridResult(**r)


def _or_infinity(bound: float | None) -> float:
    return math.inf if bound is None else float(bound)


def _vector(theta: Any) -> list:
    return [float(v) for v in np.asarray(theta, dtype=np.float64).ravel()]
