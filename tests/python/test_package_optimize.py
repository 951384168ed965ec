"""The optimisers from Python (fs.lanczos, fs.newton, fs.trust_region, Solver.lambda_min): Lanczos
against numpy.linalg.eigvalsh (random indefinite matrices, and the OT Hessian built column by column
from Solver.hvp), Newton-CG and the trust region on the 2-d Rosenbrock function and on a saddle,
and errors from the callables surfacing as Python exceptions."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("flashsinkhorn._core")
import flashsinkhorn as fs  # noqa: E402

from package_helpers import converged_kwargs, random_problem  # noqa: E402


@pytest.mark.parametrize("p", [1, 7, 40])
def test_lanczos_matches_eigvalsh(p):
    rng = np.random.default_rng(p)
    m = rng.normal(size=(p, p))
    a = m + m.T
    r = fs.lanczos(lambda v: a @ v, p, max_steps=p, tol=1e-12)
    eigenvalues = np.linalg.eigvalsh(a)
    assert r.lambda_min == pytest.approx(eigenvalues[0], abs=1e-8 * np.abs(eigenvalues).max())
    assert r.lambda_max == pytest.approx(eigenvalues[-1], abs=1e-8 * np.abs(eigenvalues).max())
    assert np.linalg.norm(r.ritz_vector_min) == pytest.approx(1.0)


def rosenbrock(theta):
    x, y = theta
    value = (1 - x) ** 2 + 100 * (y - x * x) ** 2
    gradient = np.array([-2 * (1 - x) - 400 * x * (y - x * x), 200 * (y - x * x)])
    return value, gradient


def rosenbrock_hvp(theta, v):
    x, y = theta
    h = np.array([[2 - 400 * (y - 3 * x * x), -400 * x], [-400 * x, 200.0]])
    return h @ v


@pytest.mark.parametrize("method", ["newton", "trust_region"])
def test_rosenbrock_reaches_the_minimiser(method):
    r = getattr(fs, method)(rosenbrock, rosenbrock_hvp, [-1.2, 1.0], tol=1e-10)
    assert r.status == "converged"
    np.testing.assert_allclose(r.theta, [1.0, 1.0], atol=1e-8)
    assert r.iterations == len(r.history) and r.evaluations[2] > 0


def test_trust_region_leaves_a_saddle():
    """f = x² − y² + y⁴/4 from next to the saddle (0, 0): the minimisers are (0, ±√2)."""
    def gradient(t):
        x, y = t
        return x * x - y * y + y ** 4 / 4, np.array([2 * x, -2 * y + y ** 3])

    def hvp(t, v):
        return np.array([2 * v[0], (-2 + 3 * t[1] ** 2) * v[1]])

    r = fs.trust_region(gradient, hvp, [1e-8, 1e-6], tol=1e-10)
    np.testing.assert_allclose(np.abs(r.theta), [0.0, np.sqrt(2)], atol=1e-7)
    assert any(step[5] for step in r.history)  # negative curvature met on the way


def test_callback_errors_surface():
    def broken(theta):
        raise RuntimeError("broken gradient")

    with pytest.raises(RuntimeError, match="broken gradient"):
        fs.newton(broken, rosenbrock_hvp, [0.0, 0.0])
    with pytest.raises(fs.InvalidArgument, match="hvp returned 3 values"):
        fs.newton(rosenbrock, lambda t, v: np.zeros(3), [0.0, 0.0])


def test_solver_lambda_min_matches_the_dense_hessian():
    x, y, a, b = random_problem(91, 6, 5, 2)
    s = fs.Solver(x, y, a, b, **converged_kwargs(eps=0.3))
    s.solve()
    size = x.size
    columns = [s.hvp(np.eye(size)[k].reshape(x.shape), tol=1e-12).product.ravel() for k in range(size)]
    hessian = np.array(columns).T
    eigenvalues = np.linalg.eigvalsh(0.5 * (hessian + hessian.T))
    r = s.lambda_min(max_steps=size, tol=1e-10, hvp_tol=1e-12)
    assert r.lambda_min == pytest.approx(eigenvalues[0], abs=1e-7 * np.abs(eigenvalues).max())
    assert r.lambda_max == pytest.approx(eigenvalues[-1], abs=1e-7 * np.abs(eigenvalues).max())
