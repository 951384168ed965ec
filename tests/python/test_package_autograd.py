"""First derivatives through torch.autograd: gradcheck (float64, central differences of the
converged value) for x, y, a, b, debiased and unbalanced included, and needs_input_grad (losses of
the potentials: test_package_potential_vjp.py).

The value is the converged dual value, so its derivative is the envelope gradient the library
streams; the solves run to a marginal error of 1e-13, far below gradcheck's tolerances. Second
derivatives (double backward through the joint HVP): test_package_double_backward.py."""

from __future__ import annotations

import pytest

pytest.importorskip("flashsinkhorn._core")
torch = pytest.importorskip("torch")
import flashsinkhorn as fs  # noqa: E402

from package_helpers import converged_kwargs, float64_tensors  # noqa: E402


def tensors(seed, n, m, d, requires_grad=True):
    return float64_tensors(seed, n, m, d, requires_grad)




CASES = [  # (kwargs, differentiate the weights)
    (dict(eps=0.5), True),
    (dict(eps=0.2, cost_scale=0.5), True),
    (dict(eps=0.3, debias=True), True),
    (dict(eps=0.5, solver="symmetric", scaling=0.7), True),
    (dict(eps=0.5, cost="cosine"), True),
    (dict(eps=0.5, reach=1.0), False),  # weight gradients: balanced sides only
    (dict(eps=0.5, reach=1.5, debias=True), False),
]


@pytest.mark.parametrize("kwargs,weights", CASES, ids=[str(c[0]) for c in CASES])
def test_gradcheck_first_order(kwargs, weights):
    x, y, a, b = tensors(41, 7, 6, 2)
    if not weights:
        a, b = a.detach(), b.detach()
    options = converged_kwargs(**kwargs)

    def value(x, y, a, b):
        return fs.sinkhorn(x, y, a, b, **options).cost

    # Finite-difference steps of 1e-6 on a value converged to 1e-13: error ≈ 1e-7 of the gradient.
    assert torch.autograd.gradcheck(value, (x, y, a, b), eps=1e-6, atol=1e-6, rtol=1e-5)


def test_gradcheck_uniform_weights_and_sizes_one():
    x, y, _, _ = tensors(42, 1, 5, 3)
    options = converged_kwargs(eps=0.4)
    assert torch.autograd.gradcheck(lambda x, y: fs.sinkhorn(x, y, **options).cost, (x, y), eps=1e-6, atol=1e-6)


def test_only_requested_gradients_are_computed(monkeypatch):
    x, y, a, b = tensors(43, 6, 5, 2)
    y.requires_grad_(False)
    a.requires_grad_(False)
    called = []
    original = {name: getattr(fs.Solver, name) for name in ("gradient_x", "gradient_y", "gradient_a", "gradient_b")}
    for name, method in original.items():
        monkeypatch.setattr(fs.Solver, name, lambda self, _m=method, _n=name: called.append(_n) or _m(self))
    fs.sinkhorn(x, y, a, b, eps=0.5, threads=1).cost.backward()
    assert sorted(called) == ["gradient_b", "gradient_x"]
    assert y.grad is None and a.grad is None


def test_grad_output_scales():
    x, y, a, b = tensors(44, 6, 5, 2)
    r = fs.sinkhorn(x, y, a, b, **converged_kwargs(eps=0.5))
    assert r.f.requires_grad and r.g.requires_grad  # through potential_vjp: test_package_potential_vjp.py
    (3.0 * r.cost).backward()
    solver = fs.Solver(x.detach(), y.detach(), a.detach(), b.detach(), **converged_kwargs(eps=0.5))
    solver.solve()
    torch.testing.assert_close(x.grad, 3.0 * solver.gradient_x(), rtol=1e-12, atol=0)
    torch.testing.assert_close(b.grad, 3.0 * solver.gradient_b(), rtol=1e-12, atol=0)


def test_float32_gradients_match_float64():
    x, y, a, b = tensors(46, 30, 25, 3)
    grads = []
    for dtype in (torch.float64, torch.float32):
        xt = x.detach().to(dtype).requires_grad_()
        fs.sinkhorn(xt, y.detach().to(dtype), eps=0.3, tol=1e-6, threads=1).cost.backward()
        assert xt.grad.dtype == dtype
        grads.append(xt.grad.double())
    torch.testing.assert_close(grads[1], grads[0], rtol=1e-3, atol=1e-5)


class _CountingSolver:
    """A stand-in for Solver that counts its point-gradient calls (each returns a fresh tensor)."""

    def __init__(self, in_place: bool) -> None:
        self._in_place = in_place
        self.calls = {"x": 0, "y": 0}

    def gradient_x(self):
        self.calls["x"] += 1
        return torch.full((2, 3), float(self.calls["x"]))

    def gradient_y(self):
        self.calls["y"] += 1
        return torch.full((4, 3), -float(self.calls["y"]))


@pytest.mark.parametrize("in_place", [True, False])
def test_gradients_started_in_the_forward_are_taken_once(in_place):
    """_Solve.start_gradients (CUDA tensors read in place only) computes the asked-for point gradients
    once; point_gradient hands each out once, then computes it again (a second backward through a
    retained graph); a side not started is computed when asked. Off the GPU nothing starts early."""
    from flashsinkhorn._autograd import _Solve

    solve = _Solve({})
    solve.solver = _CountingSolver(in_place)
    solve.start_gradients(True, False)
    assert solve.solver.calls == ({"x": 1, "y": 0} if in_place else {"x": 0, "y": 0})
    first = solve.point_gradient(0)
    assert solve.solver.calls["x"] == 1 and float(first[0, 0]) == 1.0
    again = solve.point_gradient(0)
    assert solve.solver.calls["x"] == 2 and float(again[0, 0]) == 2.0
    assert float(solve.point_gradient(1)[0, 0]) == -1.0 and solve.solver.calls["y"] == 1
