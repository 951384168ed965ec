"""`relaxation` (over-relaxed Sinkhorn, options.hpp) through the package: accepted by sinkhorn() and
Solver, cuts the iterations of an ill-conditioned solve (ε small against the costs) while reaching
the same value, and invalid values raise flashsinkhorn.InvalidArgument naming the argument."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("flashsinkhorn._core")
import flashsinkhorn as fs  # noqa: E402

from conftest import gauge_fix  # noqa: E402


def _ill_conditioned(seed=5, n=60):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, 2)), rng.normal(size=(n, 2)) + 1.0  # C/ε up to ~800 at ε = 0.05


def _solve(relaxation, tol=1e-9, **extra):
    x, y = _ill_conditioned()
    return fs.sinkhorn(x, y, eps=0.05, scaling=0.5, tol=tol, iters=200000, precision="fp64", device="cpu",
                       relaxation=relaxation, **extra)


def test_relaxation_cuts_iterations_and_keeps_the_solution():
    # At this ε the potentials are only loosely pinned by the marginal error (a loose tol leaves them
    # apart along near-null directions, the value agreeing), so both solves go to tol = 1e-9:
    # ~1600 plain iterations, ~200 relaxed.
    plain, relaxed = _solve(1.0), _solve(1.8)
    assert plain.converged and relaxed.converged
    assert 2 * relaxed.iterations <= plain.iterations, (relaxed.iterations, plain.iterations)
    scale = max(np.abs(plain.f).max(), np.abs(plain.g).max())
    assert abs(relaxed.cost - plain.cost) <= 1e-9 * scale
    f1, g1 = gauge_fix(plain.f, plain.g, np.full(len(plain.f), 1.0 / len(plain.f)))
    f2, g2 = gauge_fix(relaxed.f, relaxed.g, np.full(len(relaxed.f), 1.0 / len(relaxed.f)))
    np.testing.assert_allclose(f2, f1, atol=1e-6 * scale, rtol=0)
    np.testing.assert_allclose(g2, g1, atol=1e-6 * scale, rtol=0)


def test_solver_accepts_relaxation_and_default_is_plain():
    x, y = _ill_conditioned()
    kwargs = dict(eps=0.5, scaling=0.5, tol=1e-6, iters=5000, precision="fp64", device="cpu")
    default = fs.Solver(x, y, **kwargs).solve()
    explicit = fs.Solver(x, y, relaxation=1.0, **kwargs).solve()
    assert explicit.iterations == default.iterations and explicit.cost == default.cost
    relaxed = fs.Solver(x, y, relaxation=1.5, **kwargs).solve()
    assert relaxed.converged and relaxed.iterations <= default.iterations


@pytest.mark.parametrize("bad", [0.0, -1.0, 2.0, 3.0, float("nan"), float("inf")])
def test_invalid_relaxation_raises(bad):
    with pytest.raises(fs.InvalidArgument, match="relaxation"):
        _solve(bad)
    with pytest.raises(fs.InvalidArgument, match="relaxation"):  # the cached options path: errors twice
        _solve(bad)


def test_relaxation_needs_the_alternating_solver():
    with pytest.raises(fs.InvalidArgument, match="alternating"):
        _solve(1.5, solver="symmetric")


def test_auto_relaxation_adapts_and_reaches_the_same_value():
    # relaxation='auto' (options.hpp, adaptive_relaxation): ω from 1.8, re-estimated at every check
    # from the marginal error's rate; on this problem fewer iterations than the fixed 1.8.
    fixed, auto = _solve(1.8), _solve("auto")
    assert auto.converged and auto.iterations < fixed.iterations, (auto.iterations, fixed.iterations)
    scale = max(np.abs(fixed.f).max(), np.abs(fixed.g).max())
    assert abs(auto.cost - fixed.cost) <= 1e-9 * scale
    with pytest.raises(fs.InvalidArgument, match="or 'auto'"):
        _solve("fast")
    with pytest.raises(fs.InvalidArgument, match="alternating"):
        _solve("auto", solver="symmetric")
