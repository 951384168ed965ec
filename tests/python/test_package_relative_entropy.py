"""`SinkhornResult.relative_entropy` (and the core's `Result.relative_entropy`): the generalised
KL(P ‖ a⊗b) = Σ P log(P/(a⊗b)) − ΣP + Σa·Σb of the plan the library uses after a solve (result.hpp),
against the dense float64 plan of the same potentials; strong duality cost = ⟨P,C⟩ + ε·KL."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("flashsinkhorn._core")
import flashsinkhorn as fs  # noqa: E402

import dense_reference as dr  # noqa: E402
from package_helpers import converged_kwargs, plan_of, random_problem  # noqa: E402


def dense_kl(plan, a, b):
    """Generalised KL with 0·log 0 = 0, float64."""
    ab = np.outer(a, b)
    positive = plan > 0
    return float(np.sum(plan[positive] * np.log(plan[positive] / ab[positive])) - plan.sum() + a.sum() * b.sum())


@pytest.mark.parametrize("reach", [None, 0.9])
def test_matches_the_dense_plan(reach):
    x, y, a, b = random_problem(7101, 29, 23, 3, shift=0.8)
    a[3] = 0.0  # a zero weight on each side: 0·log 0 = 0
    b[11] = 0.0
    eps = 0.2
    r = fs.sinkhorn(x, y, a, b, eps=eps, iters=15, tol=0, reach=reach, precision="fp64", threads=1)
    assert isinstance(r.relative_entropy, float)
    prob = dr.DenseProblem(x, y, a, b, eps=eps, reach=reach)
    want = dense_kl(plan_of(prob, r.f, r.g), prob.a, prob.b)
    assert want > 0
    assert abs(r.relative_entropy - want) <= 1e-12 * max(1.0, want), (r.relative_entropy, want)


def test_strong_duality_and_core_result():
    x, y, a, b = random_problem(7102, 41, 37, 2)
    eps = 0.3
    r = fs.sinkhorn(x, y, a, b, eps=eps, **converged_kwargs())
    assert r.converged
    assert r.relative_entropy >= 0
    assert abs(r.cost - (r.primal_cost + eps * r.relative_entropy)) <= 1e-9 * abs(r.cost)
    # The same number on the core's Result (the binding's def_ro) and through torch autograd.
    core_result = fs.Solver(x, y, a, b, eps=eps, **converged_kwargs())._core.solve()
    assert core_result.relative_entropy == pytest.approx(r.relative_entropy, rel=1e-12, abs=1e-14)
    torch = pytest.importorskip("torch")
    xt = torch.tensor(x, requires_grad=True)
    rt = fs.sinkhorn(xt, torch.tensor(y), torch.tensor(a), torch.tensor(b), eps=eps, **converged_kwargs())
    assert rt.relative_entropy == pytest.approx(r.relative_entropy, rel=1e-12, abs=1e-14)
