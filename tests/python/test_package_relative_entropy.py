"""`SinkhornResult.relative_entropy` (and the core's `Result.relative_entropy`): the generalised
KL(P ‖ a⊗b) = Σ P log(P/(a⊗b)) − ΣP + Σa·Σb of the plan the library uses after a solve (result.hpp),
against the dense float64 plan of the same potentials; strong duality cost = ⟨P,C⟩ + ε·KL."""

from __future__ import annotations

import math

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
    # The package solves with the core's primal_terms off (the loop alone): the core's Result leaves
    # the terms NaN, and its primal_objective() — what the result computed on first use — gives them.
    core = fs.Solver(x, y, a, b, eps=eps, **converged_kwargs())._core
    core_result = core.solve()
    assert math.isnan(core_result.relative_entropy) and math.isnan(core_result.primal_cost)
    assert core.primal_objective() == pytest.approx((r.primal_cost, r.relative_entropy), rel=1e-12, abs=1e-14)
    # The same number through torch autograd.
    torch = pytest.importorskip("torch")
    xt = torch.tensor(x, requires_grad=True)
    rt = fs.sinkhorn(xt, torch.tensor(y), torch.tensor(a), torch.tensor(b), eps=eps, **converged_kwargs())
    assert rt.relative_entropy == pytest.approx(r.relative_entropy, rel=1e-12, abs=1e-14)


def test_primal_terms_are_computed_on_first_use_and_belong_to_one_solve():
    x, y, a, b = random_problem(7103, 30, 20, 3)
    solver = fs.Solver(x, y, a, b, eps=0.2, iters=5, tol=0, precision="fp64", threads=1)
    first = solver.solve()
    assert first.primal._values is None  # the solve ran the loop alone
    kl = first.relative_entropy
    assert first.primal._values is not None and first.primal_cost == first.primal._values[0]
    second = solver.solve()  # continues from the potentials: another plan
    assert second.relative_entropy != kl
    assert first.relative_entropy == kl  # kept from its own solve
    unread, newest = solver.solve(), solver.solve()
    with pytest.raises(RuntimeError, match="solved again"):
        unread.primal_cost  # noqa: B018 — asked for only after a newer solve
    assert newest.primal_cost > 0
