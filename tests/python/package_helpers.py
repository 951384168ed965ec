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


def float64_tensors(seed, n, m, d, requires_grad=False):
    """random_problem's (x, y, a, b) as float64 torch tensors (torch imported here: the NumPy-only
    tests import this module too)."""
    import torch
    return tuple(torch.tensor(v, dtype=torch.float64, requires_grad=requires_grad)
                 for v in random_problem(seed, n, m, d))


# torch.autograd.gradgradcheck on float64 problems solved to a marginal error of 1e-13: the first
# derivatives are exact to ~1e-13 of the value's scale and are differenced with eps = 1e-5
# (truncation O(eps²) ≈ 1e-10, noise 1e-13/eps ≈ 1e-8); atol 1e-6, rtol 1e-4 leave two orders. The
# analytic side is the streamed HVP with its CG at 1e-10.
GRADGRAD = dict(eps=1e-5, atol=1e-6, rtol=1e-4)
