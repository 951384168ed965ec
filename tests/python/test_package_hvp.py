"""Hessian-vector products from Python (Solver.hvp): against central differences of the library's
exact gradient at tight convergence, symmetry ⟨B, H A⟩ = ⟨A, H B⟩, the split full = fixed +
implicit with the implicit part PSD, and argument errors."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("flashsinkhorn._core")
import flashsinkhorn as fs  # noqa: E402

from package_helpers import converged_kwargs, random_problem  # noqa: E402


def solved(x, y, a, b, **overrides):
    s = fs.Solver(x, y, a, b, **converged_kwargs(eps=0.5, **overrides))
    s.solve()
    return s


@pytest.mark.parametrize("wrt", ["x", "y"])
def test_hvp_matches_differences_of_the_gradient(wrt):
    x, y, a, b = random_problem(81, 9, 7, 3)
    direction = np.random.default_rng(82).normal(size=(x if wrt == "x" else y).shape)
    product = solved(x, y, a, b).hvp(direction, wrt=wrt, tol=1e-12)
    assert product.converged and product.cg_iterations > 0
    h = 1e-5

    def gradient(t):
        xs, ys = (x + t * direction, y) if wrt == "x" else (x, y + t * direction)
        s = solved(xs, ys, a, b)
        return s.gradient_x() if wrt == "x" else s.gradient_y()

    differences = (gradient(h) - gradient(-h)) / (2 * h)
    np.testing.assert_allclose(product.product, differences, rtol=1e-6, atol=1e-7 * np.abs(differences).max())


def test_symmetry_and_parts():
    x, y, a, b = random_problem(83, 8, 6, 2)
    s = solved(x, y, a, b)
    rng = np.random.default_rng(84)
    u, v = rng.normal(size=x.shape), rng.normal(size=x.shape)
    hu, hv = s.hvp(u, tol=1e-12).product, s.hvp(v, tol=1e-12).product
    assert np.vdot(v, hu) == pytest.approx(np.vdot(u, hv), rel=1e-9)
    fixed, implicit = s.hvp(u, part="fixed").product, s.hvp(u, part="implicit", tol=1e-12).product
    np.testing.assert_allclose(fixed + implicit, hu, rtol=1e-9, atol=1e-12)
    assert s.hvp(fixed, part="fixed").cg_iterations == 0
    for w in (u, v, rng.normal(size=x.shape)):
        assert np.vdot(w, s.hvp(w, part="implicit", tol=1e-12).product) >= -1e-12


def test_sparse_preconditioner_same_product_fewer_iterations():
    """preconditioner='sparse' (the Schur complement of the plan's 8 largest entries per row, solved
    exactly): at a small ε the same product as the diagonal's in a fraction of the CG iterations, for
    hvp and hvp_xy alike."""
    x, y, a, b = random_problem(86, 90, 110, 3)
    s = fs.Solver(x, y, a, b, **converged_kwargs(eps=0.05))
    s.solve()
    direction = np.random.default_rng(87).normal(size=x.shape)
    diagonal = s.hvp(direction, tol=1e-10, iters=5000)
    sparse = s.hvp(direction, tol=1e-10, iters=5000, preconditioner="sparse")
    assert diagonal.converged and sparse.converged
    assert 4 * sparse.cg_iterations <= diagonal.cg_iterations, (sparse.cg_iterations, diagonal.cg_iterations)
    np.testing.assert_allclose(sparse.product, diagonal.product, rtol=0, atol=1e-7 * np.abs(diagonal.product).max())
    joint = s.hvp_xy(direction, None, tol=1e-10, iters=5000, preconditioner="sparse")
    np.testing.assert_allclose(joint.product_x, diagonal.product, rtol=0, atol=1e-7 * np.abs(diagonal.product).max())


def test_sparse_preconditioner_before_convergence_in_fp32():
    """Five iterations (marginal error 0.6) in fp32: S is indefinite at the level of its rounding and
    S_k's directions find it (non-positive curvature after one iteration, at residual 8e-3, with a
    product 1.2% off the diagonal's). On the CPU the product is then redone on float64 passes
    (redone_in_float64): it reaches the tolerance and gives the diagonal's product to the distance of
    the fp32 and float64 plans."""
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((300, 16)).astype(np.float32), rng.standard_normal((300, 16)).astype(np.float32)
    a, b = rng.random(300) + 0.1, rng.random(300) + 0.1
    s = fs.Solver(x, y, a / a.sum(), b / b.sum(), eps=0.1, iters=5, tol=0, precision="fp32", device="cpu", threads=1)
    assert s.solve().marginal_error > 0.3
    direction = np.random.default_rng(1).standard_normal(x.shape).astype(np.float32)
    diagonal = s.hvp(direction, tol=1e-4, iters=400)
    sparse = s.hvp(direction, tol=1e-4, iters=400, preconditioner="sparse")
    assert diagonal.converged and sparse.converged, (diagonal.relative_residual, sparse.relative_residual)
    assert sparse.redone_in_float64 and not diagonal.redone_in_float64
    assert sparse.cg_iterations * 10 < diagonal.cg_iterations
    np.testing.assert_allclose(sparse.product, diagonal.product, rtol=0, atol=5e-3 * np.abs(diagonal.product).max())


def test_a_crawling_sparse_cg_in_fp32_is_redone_in_float64():
    """1,000 × 8 points from torch's generator (seed 0), 10 iterations at ε = 0.1 in fp32: the sparse
    CG does not break down but crawls (7e-5 after 1,000 iterations against a tolerance of 1e-6, where
    float64 passes take 4). After its 50-iteration budget in single precision the product is redone
    on float64 passes: converged, and within the fp32 plan's distance of a float64 solve's product."""
    torch = pytest.importorskip("torch")
    generator = torch.Generator().manual_seed(0)
    x, y, v = (torch.randn(1000, 8, generator=generator).numpy() for _ in range(3))
    single = fs.Solver(x, y, eps=0.1, iters=10, tol=0, device="cpu", threads=2)
    exact = fs.Solver(x.astype(np.float64), y.astype(np.float64), eps=0.1, iters=10, tol=0, device="cpu", threads=2)
    single.solve()
    exact.solve()
    got = single.hvp_xy(v, None, y=False, tol=1e-6, iters=1000, preconditioner="sparse")
    want = exact.hvp_xy(v.astype(np.float64), None, y=False, tol=1e-6, iters=1000, preconditioner="sparse")
    assert got.converged and got.redone_in_float64 and not want.redone_in_float64
    assert got.cg_iterations <= 60, got.cg_iterations
    np.testing.assert_allclose(got.product_x, want.product_x, rtol=0, atol=1e-2 * np.abs(want.product_x).max())


def test_bad_arguments_are_named():
    x, y, a, b = random_problem(85, 5, 4, 2)
    s = solved(x, y, a, b)
    with pytest.raises(ValueError, match="wrt"):
        s.hvp(np.zeros((5, 2)), wrt="z")
    with pytest.raises(ValueError, match="part"):
        s.hvp(np.zeros((5, 2)), part="psd")
    with pytest.raises(ValueError, match="preconditioner"):
        s.hvp(np.zeros((5, 2)), preconditioner="jacobi")
    with pytest.raises(fs.InvalidArgument):
        s.hvp(np.zeros((4, 2)))  # X has 5 points


def test_self_hvp_is_the_hessian_of_the_debiasing_term():
    """wrt='self' on a solver of (x, x, a, a): differences of ∇T(X) = ∇_x + ∇_y at (X, X), the joint
    product summed, and far fewer CG iterations than the Schur complement at small ε."""
    x, _, a, _ = random_problem(86, 40, 40, 2)
    direction = np.random.default_rng(87).normal(size=x.shape)

    def self_solved(points, eps, **overrides):
        s = fs.Solver(points, points, a, a, **converged_kwargs(eps=eps, solver="symmetric", **overrides))
        s.solve()
        return s

    s = self_solved(x, 0.5)
    product = s.hvp(direction, wrt="self", tol=1e-12)
    assert product.converged

    def gradient(t):
        moved = self_solved(x + t * direction, 0.5)
        return moved.gradient_x() + moved.gradient_y()

    h = 1e-5
    differences = (gradient(h) - gradient(-h)) / (2 * h)
    np.testing.assert_allclose(product.product, differences, rtol=1e-6, atol=1e-7 * np.abs(differences).max())
    joint = s.hvp_xy(direction, direction, tol=1e-12)
    np.testing.assert_allclose(product.product, joint.product_x + joint.product_y, rtol=1e-8,
                               atol=1e-10 * np.abs(product.product).max())

    sharp = self_solved(x, 0.05)
    fast, slow = sharp.hvp(direction, wrt="self", tol=1e-10), sharp.hvp_xy(direction, direction, tol=1e-10, iters=5000)
    assert fast.converged and 3 * fast.cg_iterations < slow.cg_iterations

    with pytest.raises(fs.InvalidArgument, match="not symmetric"):
        solved(*random_problem(88, 5, 5, 2)).hvp(np.zeros((5, 2)), wrt="self")
