"""Implicit differentiation of the potentials from Python: Solver.potential_vjp and torch autograd
through f and g (docs/math.md, "Implicit differentiation of the potentials").

Math facts and oracles: with ḟ = a, ġ = b the loss is the dual value, whose total derivative is the
envelope gradient the library streams; torch.autograd.gradcheck (central differences of solves
converged to 1e-13) for gauge-invariant losses of (f, g), linear and nonlinear, alone and together
with the value; the documented gauge projection for a loss that is not invariant."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("flashsinkhorn._core")
import flashsinkhorn as fs  # noqa: E402

from package_helpers import converged_kwargs, float64_tensors, random_problem  # noqa: E402


def tensors(seed, n, m, d, requires_grad=True):
    return float64_tensors(seed, n, m, d, requires_grad)


def test_dual_value_cotangent_gives_the_envelope_gradient():
    x, y, a, b = random_problem(61, 9, 7, 3)
    solver = fs.Solver(x, y, a, b, **converged_kwargs(eps=0.4))
    solver.solve()
    r = solver.potential_vjp(a / a.sum(), b / b.sum(), tol=1e-12)
    assert r.converged and r.iterations > 0 and abs(r.gauge_defect) < 1e-12
    # (Not for the weights: the value also depends on a, b directly, which no cotangent of f, g carries.)
    np.testing.assert_allclose(r.grad_x, solver.gradient_x(), rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(r.grad_y, solver.gradient_y(), rtol=1e-8, atol=1e-12)


def test_only_the_requested_gradients_come_back():
    x, y, a, b = random_problem(62, 5, 4, 2)
    solver = fs.Solver(x, y, a, b, **converged_kwargs(eps=0.5))
    solver.solve()
    r = solver.potential_vjp(np.ones(5), np.ones(4) * 1.25, x=False, y=True)
    assert r.grad_x is None and r.grad_a is None and r.grad_b is None and r.grad_y.shape == (4, 2)
    with pytest.raises(ValueError, match="preconditioner"):
        solver.potential_vjp(np.ones(5), None, preconditioner="jacobi")
    with pytest.raises(fs.InvalidArgument, match="df"):
        solver.potential_vjp(np.ones(3), None)


torch = pytest.importorskip("torch")




def gauge_free_weights(seed, n, m):
    """u (n,), v (m,) with Σu = Σv: ⟨u, f⟩ + ⟨v, g⟩ is unchanged by (f + t, g − t)."""
    rng = np.random.default_rng(seed)
    u, v = rng.normal(size=n), rng.normal(size=m)
    v += (u.sum() - v.sum()) / m
    return torch.tensor(u), torch.tensor(v)


LOSSES = {
    "linear": lambda r, u, v: (r.f * u).sum() + (r.g * v).sum(),
    "nonlinear": lambda r, u, v: ((r.f - r.f.mean()) ** 2).sum() + torch.sin(r.g - r.g.mean()).sum()
    + (r.f.mean() + r.g.mean()) ** 2,
    "with the value": lambda r, u, v: 2.0 * r.cost + (r.f * u).sum() + (r.g * v).sum(),
}


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_gradcheck_losses_of_the_potentials(name):
    x, y, a, b = tensors(63, 6, 5, 2)
    u, v = gauge_free_weights(64, 6, 5)
    options = converged_kwargs(eps=0.5)

    def loss(x, y, a, b):
        return LOSSES[name](fs.sinkhorn(x, y, a, b, **options), u, v)

    # Central differences of step 1e-6 on solves converged to 1e-13.
    assert torch.autograd.gradcheck(loss, (x, y, a, b), eps=1e-6, atol=1e-6, rtol=1e-5)


def test_a_loss_that_is_not_gauge_invariant_is_projected():
    """Σḟ ≠ Σġ: the component along (1, −1) is removed (potential_vjp.hpp), i.e. the derivative of
    f.sum() − t(f, g) with the loss made invariant by subtracting its gauge part."""
    x, y, a, b = tensors(65, 6, 5, 2)
    r = fs.sinkhorn(x, y, a, b, **converged_kwargs(eps=0.5))
    r.f.sum().backward()
    want = fs.Solver(x.detach(), y.detach(), a.detach(), b.detach(), **converged_kwargs(eps=0.5))
    want.solve()
    # The projected cotangent: ḟ = 1 − t, ġ = t with t = (n − 0)/(n + m) removed along (1, −1).
    t = 6 / (6 + 5)
    projected = want.potential_vjp(np.full(6, 1 - t), np.full(5, t), a=True, b=True, tol=1e-10)
    np.testing.assert_allclose(x.grad.numpy(), projected.grad_x, rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(b.grad.numpy(), projected.grad_b, rtol=1e-6, atol=1e-10)


def test_unbalanced_potentials_say_it_is_unsupported():
    x, y, a, b = tensors(66, 5, 4, 2)
    r = fs.sinkhorn(x, y, a, b, **converged_kwargs(eps=0.5, reach=1.0))
    with pytest.raises(fs.Unsupported):
        r.f.sum().backward()
