"""The two optimiser runs on L(W) = OT_ε(XW, Y) and their comparison.

- hybrid: fs.hybrid (flashsinkhorn::optim::hybrid): Adam while the Lanczos λ_min(∇²_W L) ≤ 0, the
  trust region (or Newton-CG) once a converged λ_min > 0.
- adam: fs.adam, the same library Adam with the same learning rate, alone.
Both see the same callbacks (regression_loss.ShuffledRegressionLoss), so wall time per evaluation
and the counts come from one record. A "step" below is one gradient evaluation: an Adam step, or a
second-order iterate or trial point.

"The same loss" (the comparison): the target is L* = L_hybrid_final·(1 + rtol) (for L > 0); a run
reaches it at its first gradient evaluation with L ≤ L*. Reported too: the first evaluation with
‖∇L‖ ≤ gradient_target. Times are wall seconds at the end of that evaluation, λ_min checks and
Hessian products included.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

import flashsinkhorn as fs

from regression_loss import ShuffledRegressionLoss
from regression_resume import join, start_of


def run_hybrid(loss: ShuffledRegressionLoss, w0: np.ndarray, w_star: np.ndarray, *, lr: float, adam_iters: int,
               check_every: int, tol: float, check_gradient_norm: float | None = None, second_order: str = "trust_region", radius: float = 1.0,
               forcing_max: float = 0.9,
               iters: int | None = None, lanczos_steps: int = 50, lanczos_tol: float = 1e-4, seed: int = 0,
               negative_tol: float = 1e-6, switch_threshold: float = 0.0, max_seconds: float | None = None,
               warm_trials: bool = False, resume: dict | None = None, potentials: dict | None = None,
               dense_model_dimension: int = 0, check_at_start: bool = False) -> dict:
    """fs.hybrid on the loss; `max_seconds` is the library's wall-time budget (status 'time_limit', the
    λ_min trace kept); `check_gradient_norm`: the checks' gradient gate (None: none); `warm_trials`: the second-order method's trial points by loss.value (warm from
    the iterate), else by a gradient evaluation each; `dense_model_dimension`: fs.hybrid's (d_x·d_y ≤ it:
    exact checks and trust-region steps on the Hessian formed by d_x·d_y products); `check_at_start`:
    fs.hybrid's (a check at W0 whatever the gate). `resume`: an earlier segment's trace of this run
    (regression_resume), continued from its state and joined to it; `potentials`: that segment's last
    solve (ShuffledRegressionLoss.potentials_at), the continuation's warm start."""
    loss.reset()
    state = None
    if resume is not None:
        w0, saved, smallest = start_of(resume)
        state = fs.HybridState.from_dict(saved)
        _continue(loss, smallest, potentials)
    memory = _MemoryProbe(loss.device)
    try:
        r = fs.hybrid(loss.gradient, loss.hvp, w0.ravel(), value=loss.value if warm_trials else None, lr=lr,
                      adam_iters=adam_iters, adam_tol=tol, check_every=check_every,
                      check_gradient_norm=check_gradient_norm, tol=tol,
                      second_order=second_order, radius=radius, forcing_max=forcing_max, iters=iters,
                      lanczos_steps=lanczos_steps, lanczos_tol=lanczos_tol, seed=seed, negative_tol=negative_tol,
                      switch_threshold=switch_threshold, max_seconds=max_seconds, resume=state,
                      dense_model_dimension=dense_model_dimension, check_at_start=check_at_start)
        summary = dict(status=r.status, switch_iteration=r.switch_iteration,
                       lambda_trace=[s._asdict() for s in r.lambda_trace],
                       adam_iterations=r.adam.iterations,
                       second_order_iterations=0 if r.second_order is None else r.second_order.iterations,
                       second_order_history=[] if r.second_order is None else [list(h) for h in r.second_order.history],
                       evaluations=dict(zip(("values", "gradients", "hvps"), r.evaluations)),
                       final_theta=r.theta.tolist(), final_value=r.value, final_gradient_norm=r.gradient_norm,
                       state=r.state.to_dict())
    except fs.StopOptimization as stop:  # inside the first evaluation: the library has nothing to return yet
        summary = _cut_at_start(stop, resume, switch_iteration=None, lambda_trace=[])
        if resume is not None:
            summary.update(switch_iteration=resume.get("switch_iteration", -1), adam_iterations=state.adam.steps,
                           second_order_iterations=0, second_order_history=[],
                           evaluations=dict(values=0, gradients=0, hvps=0))
    trace = trace_of(loss, w_star)
    trace.update(summary, method="hybrid", peak_memory=memory.read())
    trace["switch_step"] = _switch_step(trace)
    return trace if resume is None else join(resume, trace)


def run_adam(loss: ShuffledRegressionLoss, w0: np.ndarray, w_star: np.ndarray, *, lr: float, iters: int,
             tol: float, max_seconds: float | None = None, resume: dict | None = None,
             potentials: dict | None = None) -> dict:
    """fs.adam on the loss, with the same wall-time budget as run_hybrid; `resume`, `potentials` as there."""
    loss.reset()
    state = None
    if resume is not None:
        w0, saved, smallest = start_of(resume)
        state = fs.AdamState.from_dict(saved)
        _continue(loss, smallest, potentials)
    memory = _MemoryProbe(loss.device)
    try:
        r = fs.adam(loss.gradient, w0.ravel(), lr=lr, tol=tol, iters=iters, max_seconds=max_seconds, state=state)
        summary = dict(status=r.status, iterations=r.iterations, final_theta=r.theta.tolist(), final_value=r.value,
                       final_gradient_norm=r.gradient_norm, state=r.state.to_dict())
    except fs.StopOptimization as stop:  # inside the first evaluation (see run_hybrid)
        summary = _cut_at_start(stop, resume)
        if resume is not None:
            summary.update(iterations=state.steps)
    trace = trace_of(loss, w_star)
    trace.update(summary, method="adam", peak_memory=memory.read())
    return trace if resume is None else join(resume, trace)


def _cut_at_start(stop: Exception, resume: dict | None, **fresh) -> dict:
    """A segment whose first evaluation the budget cut (the library re-raises the callback's
    BudgetExhausted as fs.StopOptimization; no step was made). A fresh run ends there (status
    'budget_exhausted', with `fresh`); a continuation is 'stopped' where it started, the earlier
    segment's θ and state kept, so that the next --resume tries again (with a larger budget)."""
    message = str(stop).strip().splitlines()[-1]  # the callback's own message, after the traceback
    if resume is None:
        return dict(status="budget_exhausted", message=message, **fresh)
    return dict(status="stopped", message=message, final_theta=list(resume["final_theta"]), state=resume["state"],
                final_value=resume.get("final_value"), final_gradient_norm=resume.get("final_gradient_norm"))


def _continue(loss: ShuffledRegressionLoss, smallest_gradient_norm: float, potentials: dict | None) -> None:
    """A continuation's loss: the forcing term's memory and, when saved, the last solve's potentials."""
    loss.continue_forcing(smallest_gradient_norm)
    if potentials is not None:
        loss.restore_potentials(potentials)


def trace_of(loss: ShuffledRegressionLoss, w_star: np.ndarray) -> dict:
    """Per gradient evaluation: wall time at its end, L, ‖∇L‖, ‖W − W*‖_F, Sinkhorn iterations; and
    the Hessian products' count, CG iterations and seconds."""
    grads = [e for e in loss.record if e.kind == "gradient"]
    hvps = [e for e in loss.record if e.kind == "hvp"]
    values = [e for e in loss.record if e.kind == "value"]
    star = np.asarray(w_star, dtype=np.float64).ravel()
    return dict(
        time=[e.start + e.seconds for e in grads],
        value=[e.value for e in grads],
        gradient_norm=[e.gradient_norm for e in grads],
        w_error=[float(np.linalg.norm(np.asarray(e.theta) - star)) for e in grads],
        sinkhorn_iterations=[e.iterations for e in grads], solve_tol=[e.solve_tol for e in grads],
        sinkhorn_converged=all(e.converged for e in grads), warm_solves=loss.warm_solves,
        gradient_seconds=sum(e.seconds for e in grads),
        hvp_count=len(hvps), hvp_cg_iterations=sum(e.iterations for e in hvps),
        hvp_seconds=sum(e.seconds for e in hvps), hvp_converged=all(e.converged for e in hvps),
        trial_values=len(values), trial_value_seconds=sum(e.seconds for e in values),
        trial_value_iterations=[e.iterations for e in values],
        wall_seconds=loss.elapsed())


def compare(hybrid: dict, adam: dict, *, rtol: float, gradient_target: float) -> dict:
    """Time and steps of each run to L ≤ L_hybrid_final·(1 + rtol) and to ‖∇L‖ ≤ gradient_target; and
    `common`: each run's time to the loss both reached, the larger best loss·(1 + rtol) — defined
    whenever both runs improved on their start, where the first target is missed by a run that ends
    in a worse point (Adam stopping at its gradient tolerance above the hybrid's minimum)."""
    final = min(hybrid["value"]) if hybrid["value"] else math.nan
    target = _loosened(final, rtol)
    out: dict[str, Any] = dict(loss_target=target, rtol=rtol, gradient_target=gradient_target)
    for name, trace in (("hybrid", hybrid), ("adam", adam)):
        k = next((i for i, v in enumerate(trace["value"]) if v <= target), None)
        j = next((i for i, g in enumerate(trace["gradient_norm"]) if g <= gradient_target), None)
        out[name] = dict(seconds_to_loss=None if k is None else trace["time"][k], steps_to_loss=None if k is None else k,
                         seconds_to_gradient=None if j is None else trace["time"][j],
                         steps_to_gradient=None if j is None else j,
                         best_loss=min(trace["value"]) if trace["value"] else None, wall_seconds=trace["wall_seconds"])
    h, a = out["hybrid"]["seconds_to_loss"], out["adam"]["seconds_to_loss"]
    out["speedup_to_loss"] = None if h is None or a is None else a / h
    if hybrid["value"] and adam["value"]:
        common = _loosened(max(min(hybrid["value"]), min(adam["value"])), rtol)
        seconds = {name: next(t for t, v in zip(trace["time"], trace["value"]) if v <= common)
                   for name, trace in (("hybrid", hybrid), ("adam", adam))}
        out["common"] = dict(loss_target=common, hybrid_seconds=seconds["hybrid"], adam_seconds=seconds["adam"],
                             speedup=seconds["adam"] / seconds["hybrid"])
    return out


def _loosened(loss: float, rtol: float) -> float:
    """loss·(1 + rtol), loosened upward for a negative loss too."""
    return loss * (1 + rtol) if loss > 0 else loss + rtol * abs(loss)


def _switch_step(trace: dict) -> int | None:
    """The gradient-evaluation index where the second-order phase starts: the hybrid evaluates the
    gradient once per Adam step (θ_0 included), so it is switch_iteration + 1."""
    s = trace.get("switch_iteration")
    return None if s is None or s < 0 else s + 1


class _MemoryProbe:
    """Peak device memory of a run: torch's allocator plus the solvers' own pool (CUDA only)."""

    def __init__(self, device: torch.device) -> None:
        self.cuda = device.type == "cuda"
        if self.cuda:
            torch.cuda.synchronize(device)
            torch.cuda.reset_peak_memory_stats(device)
            fs.reset_peak_memory_stats(device)
        self.device = device

    def read(self) -> dict:
        if not self.cuda:
            return dict(device="cpu", torch_bytes=0, flashsinkhorn_bytes=0, total_bytes=0)
        torch.cuda.synchronize(self.device)
        t, f = int(torch.cuda.max_memory_allocated(self.device)), int(fs.max_memory_allocated(self.device))
        return dict(device=str(self.device), torch_bytes=t, flashsinkhorn_bytes=f, total_bytes=t + f)
