"""Shared helpers of the test_package_*.py files (the Python package, not the CLI)."""

from __future__ import annotations

import numpy as np

from conftest import random_problem  # noqa: F401  (re-exported for the package tests)


def converged_kwargs(**overrides):
    """Options of a float64 solve run far past any test tolerance (marginal error ≤ 1e-13).

    One CPU thread: these problems are tiny, and on a shared machine every OpenMP barrier of a
    multi-threaded solve can wait for a descheduled thread (a 92-iteration solve of 7×6 points took
    2 s with the default thread count, 1 ms with one thread)."""
    kwargs = dict(precision="fp64", iters=100000, tol=1e-13, check_every=1, threads=1)
    kwargs.update(overrides)
    return kwargs


def plan_of(prob, f, g):
    """The dense plan (solver.hpp's definition) from the library's potentials, float64."""
    return prob.plan(np.asarray(f, dtype=np.float64), np.asarray(g, dtype=np.float64))
