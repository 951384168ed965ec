"""Values of `flashsinkhorn.sinkhorn` against the float64 dense reference and POT, in float64.

The package adds nothing to the numerics, so these are few: they show that every option reaches
the C++ core intact (solver, ε-scaling, reach, debias, cosine, unnormalised weights) and that the
potentials come back in the right order and convention."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("flashsinkhorn._core")
import flashsinkhorn as fs  # noqa: E402

import dense_reference as dr  # noqa: E402
from conftest import gauge_fix, rel_err  # noqa: E402
from package_helpers import converged_kwargs, random_problem  # noqa: E402


@pytest.mark.parametrize("n,m,d,s,eps", [(1, 7, 2, 1.0, 0.5), (37, 41, 3, 0.5, 0.05), (65, 63, 5, 1.0, 0.3)])
def test_alternating_converged_matches_pot(n, m, d, s, eps):
    ot = pytest.importorskip("ot")
    x, y, a, b = random_problem(100 + n, n, m, d)
    an, bn = a / a.sum(), b / b.sum()
    M = s * ot.dist(x, y)
    P, log = ot.sinkhorn(an, bn, M, eps, method="sinkhorn_log", numItermax=200000, stopThr=1e-14, log=True,
                         warn=False)
    f_pot = eps * (log["log_u"] - np.log(an))
    g_pot = eps * (log["log_v"] - np.log(bn))
    r = fs.sinkhorn(x, y, a, b, eps=eps, cost_scale=s, **converged_kwargs())
    ctx = f"n={n} m={m} d={d} s={s} eps={eps}"
    assert rel_err(r.primal_cost, float(np.sum(P * M))) <= 1e-6, ctx  # ot.sinkhorn2 is ⟨P, M⟩
    assert rel_err(r.cost, float(an @ f_pot + bn @ g_pot)) <= 1e-6, ctx
    f1, g1 = gauge_fix(r.f, r.g, a)
    f2, g2 = gauge_fix(f_pot, g_pot, a)
    atol = 1e-9 * M.max()
    np.testing.assert_allclose(f1, f2, atol=atol, rtol=0, err_msg=ctx)
    np.testing.assert_allclose(g1, g2, atol=atol, rtol=0, err_msg=ctx)


@pytest.mark.parametrize("iters", [1, 7])
def test_alternating_fixed_iterations_match_dense(iters):
    x, y, a, b = random_problem(31, 23, 19, 3)
    r = fs.sinkhorn(x, y, a, b, eps=0.1, iters=iters, tol=0, precision="fp64", threads=1)
    ref = dr.DenseProblem(x, y, a, b, eps=0.1).alternating(iters)
    assert r.iterations == iters
    assert rel_err(r.cost, ref.cost) <= 1e-12
    np.testing.assert_allclose(r.f, ref.f, atol=1e-12)
    np.testing.assert_allclose(r.g, ref.g, atol=1e-12)


@pytest.mark.parametrize("debias", [False, True])
@pytest.mark.parametrize("reach", [None, 0.8])
def test_symmetric_schedule_matches_dense(debias, reach):
    x, y, a, b = random_problem(32, 31, 27, 2, shift=0.5)
    eps, scaling = 0.02, 0.6
    r = fs.sinkhorn(x, y, a, b, eps=eps, cost_scale=0.5, solver="symmetric", scaling=scaling, iters=0, tol=0,
                    reach=reach, debias=debias, precision="fp64", threads=1)
    ref = dr.DenseProblem(x, y, a, b, eps=eps, cost_scale=0.5, reach=reach).symmetric(scaling=scaling,
                                                                                     debias=debias)
    assert r.iterations == len(ref.eps_list)
    assert rel_err(r.cost, ref.cost) <= 1e-10, (r.cost, ref.cost)
    np.testing.assert_allclose(r.f, ref.f, atol=1e-10)  # OT(a, b)'s potentials, also when debiased
    np.testing.assert_allclose(r.g, ref.g, atol=1e-10)
    if debias:  # OT(a, a)'s and OT(b, b)'s potentials
        np.testing.assert_allclose(r.f_aa, ref.extra["f_aa"], atol=1e-10)
        np.testing.assert_allclose(r.g_bb, ref.extra["g_bb"], atol=1e-10)
    else:
        assert r.f_aa is None and r.g_bb is None


def test_per_side_reach_and_cosine_cost():
    x, y, a, b = random_problem(33, 21, 17, 4)
    r = fs.sinkhorn(x, y, a, b, eps=0.1, reach_y=0.7, iters=40, tol=0, precision="fp64", threads=1)
    ref = dr.DenseProblem(x, y, a, b, eps=0.1, reach_y=0.7).alternating(40)
    assert rel_err(r.cost, ref.cost) <= 1e-12
    r = fs.sinkhorn(x, y, a, b, eps=0.1, cost="cosine", iters=30, tol=0, precision="fp64", threads=1)
    ref = dr.DenseProblem(x, y, a, b, eps=0.1, cost="cosine").alternating(30)
    assert rel_err(r.cost, ref.cost) <= 1e-12


def test_debiased_converged_matches_dense():
    x, y, a, b = random_problem(34, 19, 23, 2)
    r = fs.sinkhorn(x, y, a, b, eps=0.5, debias=True, **converged_kwargs())
    assert rel_err(r.cost, dr.debiased_converged(x, y, a, b, eps=0.5, tol=1e-12)) <= 1e-8


def test_unnormalised_weights():
    x, y, a, b = random_problem(35, 13, 17, 2)
    a2, b2 = 3 * a / a.sum(), 3 * b / b.sum()
    kw = converged_kwargs()
    normalised = fs.sinkhorn(x, y, a2, b2, eps=0.2, **kw).cost
    assert normalised == pytest.approx(fs.sinkhorn(x, y, a, b, eps=0.2, **kw).cost, rel=1e-12)
    with pytest.raises(fs.InvalidArgument, match="balanced OT needs equal masses"):
        fs.sinkhorn(x, y, a2, 2 * b2, eps=0.2, normalize_weights=False)
    raw = fs.sinkhorn(x, y, a2, b2, eps=0.2, normalize_weights=False, **kw)
    # ⟨a, f⟩ + ⟨b, g⟩ with the raw weights (GeomLoss's convention), from the dense transcription.
    prob = dr.DenseProblem(x, y, a2, b2, eps=0.2)
    prob.a, prob.b = a2, b2
    prob.log_a, prob.log_b = np.log(a2), np.log(b2)
    ref = prob.alternating(100000, tol=1e-13, check_every=1)
    assert rel_err(raw.cost, ref.cost) <= 1e-9
