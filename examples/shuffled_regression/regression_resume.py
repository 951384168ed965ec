"""A run continued in another process (run.py --resume): a run stopped by its wall-time budget (between
steps: 'time_limit'; inside one: 'stopped', the step dropped) or its iteration cap goes on from the state the library returned (fs.AdamState, fs.HybridState, kept in
the report as `state`), so that a run longer than one command can take — n = 10⁵ on the GPU machine,
whose commands stop at 10 minutes — is made of segments.

`join(previous, new)` makes one trace of the two segments: the per-evaluation lists concatenated
with the new segment's clock shifted by the previous segment's wall time, counts and seconds
summed, the λ_min trace and the second-order history concatenated. Each segment starts with one
gradient evaluation at the point where the last one stopped (its solve cold: the warm start does not
cross processes), and that evaluation's time is in the trace, as it is in the cost of resuming."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import flashsinkhorn as fs

# Per gradient evaluation (regression_runs.trace_of), and per trial value.
LISTS = ("time", "value", "gradient_norm", "w_error", "sinkhorn_iterations", "solve_tol")
# Totals of a segment.
SUMS = ("gradient_seconds", "hvp_count", "hvp_cg_iterations", "hvp_seconds", "trial_values", "trial_value_seconds",
        "warm_solves", "wall_seconds")


def resumable(trace: dict) -> bool:
    """Whether a run's trace can go on: it stopped short of convergence and kept the library's state."""
    return trace.get("status") in ("time_limit", "max_iterations", "stopped") and "state" in trace


def start_of(trace: dict) -> tuple[np.ndarray, dict, float]:
    """Where the continuation starts: θ, the library state (a dict: AdamState/HybridState.to_dict())
    and the smallest ‖∇L‖ seen (the forcing term's memory)."""
    if not resumable(trace):
        raise ValueError(f"a {trace.get('method')} run with status {trace.get('status')!r} cannot be resumed"
                         + ("" if "state" in trace else " (it kept no state)"))
    return np.asarray(trace["final_theta"], dtype=np.float64), trace["state"], min(trace["gradient_norm"])


def hybrid_after_adam(adam: dict, gate: float, check_at_start: bool = False) -> dict:
    """An Adam-alone trace as the first segment of a hybrid with the gradient gate `gate` (fs.hybrid's
    check_gradient_norm): gated, the hybrid makes no λ_min check before its first step with ‖∇L‖ ≤ gate
    and is Adam alone step for step until then (optim_hybrid_gate_test), so an Adam run none of whose
    steps met the gate is where that hybrid would be. ValueError when one did (or without a gate, or
    with `check_at_start`: that hybrid checked at W0, which Adam alone did not)."""
    if not math.isfinite(gate):
        raise ValueError("a hybrid continues an Adam-alone run only with a gradient gate (--check-gradient-norm)")
    if check_at_start:
        raise ValueError("the hybrid checks λ_min at W0 (--check-at-start), which Adam alone did not")
    start_of(adam)  # resumable
    norms = adam["gradient_norm"][:-1]  # the last is where the continuation starts: its check is the hybrid's
    inside = next((k for k, g in enumerate(norms) if g <= gate), None)
    if inside is not None:
        raise ValueError(f"Adam's step {inside} had ‖∇L‖ = {norms[inside]:.3g} ≤ the gate {gate:g}: the hybrid "
                         "would have checked λ_min there, so that Adam run is not its first segment")
    trace = {k: v for k, v in adam.items() if k != "iterations"}
    state = fs.HybridState.after_adam(fs.AdamState.from_dict(adam["state"]))
    trace.update(method="hybrid", lambda_trace=[], second_order_history=[], second_order_iterations=0,
                 switch_iteration=-1, switch_step=None, adam_iterations=state.adam.steps,
                 evaluations=dict(values=0, gradients=len(adam["value"]), hvps=0), state=state.to_dict(),
                 first_segment_from_adam=True)
    return trace


def join(previous: dict, new: dict) -> dict:
    """One trace of two consecutive segments of the same run (previous first)."""
    offset = previous["wall_seconds"]
    out: dict[str, Any] = dict(new)
    for key in LISTS:
        shift = offset if key == "time" else 0.0
        out[key] = list(previous[key]) + [v + shift for v in new[key]]
    out["trial_value_iterations"] = list(previous.get("trial_value_iterations", [])) + list(new.get("trial_value_iterations", []))
    for key in SUMS:
        out[key] = previous.get(key, 0) + new.get(key, 0)
    out["sinkhorn_converged"] = bool(previous["sinkhorn_converged"] and new["sinkhorn_converged"])
    out["hvp_converged"] = bool(previous["hvp_converged"] and new["hvp_converged"])
    out["peak_memory"] = max(previous["peak_memory"], new["peak_memory"], key=lambda m: m.get("total_bytes", 0))
    out["segments"] = previous.get("segments", 1) + 1
    if previous.get("first_segment_from_adam"):  # hybrid_after_adam: say so in every later join
        out["first_segment_from_adam"] = True
    out["segment_wall_seconds"] = list(previous.get("segment_wall_seconds", [previous["wall_seconds"]])) + [new["wall_seconds"]]
    if new.get("method") == "hybrid":
        out["lambda_trace"] = list(previous.get("lambda_trace", [])) + list(new.get("lambda_trace", []))
        out["second_order_history"] = list(previous.get("second_order_history", [])) + list(new.get("second_order_history", []))
        out["second_order_iterations"] = previous.get("second_order_iterations", 0) + new.get("second_order_iterations", 0)
        out["evaluations"] = {k: previous["evaluations"][k] + new["evaluations"][k] for k in new["evaluations"]}
        out["switch_step"] = _joined_switch_step(previous, new)
    return out


def _joined_switch_step(previous: dict, new: dict) -> int | None:
    """The gradient-evaluation index where the second-order phase starts, over both segments: kept
    when the previous segment had switched; else, for a switch after Adam step s in a segment that
    started at Adam step k0, the new segment's index s − k0 + 1 shifted by the previous evaluations."""
    if previous.get("switch_step") is not None:
        return previous["switch_step"]
    s = new.get("switch_iteration")
    if s is None or s < 0:
        return None
    k0 = previous["state"]["adam"]["steps"]
    return len(previous["value"]) + (s - k0) + 1
