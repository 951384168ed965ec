"""Whether two run.py reports solved the same problem with the same optimiser settings: what merge.py
(a hybrid and an Adam run made by separate calls) and run.py --resume (the segments of one run) check
before they join anything."""

from __future__ import annotations

# Settings that may differ between calls: which runs, where the output went, each call's budget, the
# resume source, the output's verbosity.
PER_CALL = {"runs", "out_dir", "budget_seconds", "quiet", "no_plots", "resume", "solve_progress"}
# Settings that only the hybrid reads (its checks, second-order phase and Hessian products): Adam alone
# runs the same whatever they are, so a hybrid made later with other values still joins that Adam run.
HYBRID_ONLY = {"check_every", "check_gradient_norm", "negative_tol", "switch_threshold", "hybrid_adam_iters",
               "second_order", "radius", "forcing_max", "warm_trials", "refine_iters", "hvp_tol",
               "dense_model_dimension", "check_at_start"}
# Iteration caps: a resumed segment may raise them (the caps count the steps of all segments).
CAPS = {"adam_iters", "hybrid_adam_iters"}


def differing_settings(a: dict, b: dict, defaults: dict, may_differ: set) -> list[str]:
    """'name (a's vs b's)' for every setting outside `may_differ` whose values differ; a setting absent
    from a report (added to run.py after it was made) reads as its default."""
    keys = sorted(k for k in set(a) | set(b) if k not in may_differ and a.get(k, defaults.get(k)) != b.get(k, defaults.get(k)))
    return [f"{k} ({a.get(k, defaults.get(k))!r} vs {b.get(k, defaults.get(k))!r})" for k in keys]
