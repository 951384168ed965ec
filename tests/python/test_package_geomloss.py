"""`flashsinkhorn.SamplesLoss` against GeomLoss's `SamplesLoss(..., backend='tensorized')`, float64.

Values: same arguments → the same loop (GeomLoss's ε-schedule, averaged symmetric updates, final
extrapolation), so the values agree to float64 round-off (checked to 1e-10 relative).

Gradients: GeomLoss differentiates its last extrapolation step; the library streams the envelope
gradient of the converged problem. They agree when GeomLoss's loop has converged, which its short
default schedule does not do (e.g. blur 0.5, scaling 0.5: 15% apart). So the gradient tests give
GeomLoss K extra iterations at the final ε (GeomLoss's own sinkhorn_loop, with its ε list extended
through `scaling_parameters`) and run ours with iters=K: the same loop, now converged, and the
gradients must agree to 1e-5 relative (the brief's bar; observed ~1e-8).

Unbalanced (reach): the library's gradient is the derivative of the returned value (see the
gradcheck in test_package_autograd.py); GeomLoss's is (1 + ε/2ρ)/(1 + ε/ρ) times it — checked here so
that the documented difference stays exact.
"""

from __future__ import annotations

import contextlib

import numpy as np
import pytest

pytest.importorskip("flashsinkhorn._core")
torch = pytest.importorskip("torch")
geomloss = pytest.importorskip("geomloss")
import flashsinkhorn as fs  # noqa: E402

from package_helpers import random_problem  # noqa: E402

VALUE_RTOL = 1e-10
GRAD_RTOL = 1e-5
EXTRA_ITERS = 400


def problem(seed, n=31, m=37, d=3, batch=None):
    rng = np.random.default_rng(seed)
    shape = (batch,) if batch else ()
    x = rng.normal(size=shape + (n, d))
    y = rng.normal(size=shape + (m, d)) + 0.5
    a = rng.random(shape + (n,)) + 0.1
    b = rng.random(shape + (m,)) + 0.1
    a /= a.sum(axis=-1, keepdims=True)
    b /= b.sum(axis=-1, keepdims=True)
    return x, y, a, b


def as_tensors(*arrays, requires_grad=False):
    return [torch.tensor(v, dtype=torch.float64, requires_grad=requires_grad) for v in arrays]


@contextlib.contextmanager
def geomloss_extra_iterations(k):
    """GeomLoss's ε list + [ε]·k: its own loop, run k more iterations at the final temperature."""
    module = pytest.importorskip("geomloss._legacy.sinkhorn_samples")
    original = module.scaling_parameters

    def extended(*args, **kwargs):
        diameter, eps, eps_list, rho = original(*args, **kwargs)
        return diameter, eps, list(eps_list) + [eps] * k, rho

    module.scaling_parameters = extended
    try:
        yield
    finally:
        module.scaling_parameters = original


def rel(got, want):
    got, want = torch.as_tensor(got).detach(), torch.as_tensor(want).detach()
    return float((got - want).abs().max() / want.abs().max().clamp_min(1e-300))


GRID = [(blur, scaling, debias, reach)
        for blur in (0.05, 0.5) for scaling in (0.5, 0.9) for debias in (True, False) for reach in (None, 1.0)]


@pytest.mark.parametrize("blur,scaling,debias,reach", GRID)
def test_values_equal_geomloss(blur, scaling, debias, reach):
    x, y, a, b = as_tensors(*problem(1))
    kw = dict(p=2, blur=blur, scaling=scaling, debias=debias, reach=reach)
    want = geomloss.SamplesLoss("sinkhorn", backend="tensorized", **kw)(a, x, b, y)
    got = fs.SamplesLoss("sinkhorn", threads=1, **kw)(a, x, b, y)
    assert got.shape == want.shape == ()
    assert rel(got, want) <= VALUE_RTOL, f"{kw}: {got.item()!r} vs GeomLoss {want.item()!r}"
    # loss(x, y): uniform weights
    want = geomloss.SamplesLoss("sinkhorn", backend="tensorized", **kw)(x, y)
    got = fs.SamplesLoss("sinkhorn", threads=1, **kw)(x, y)
    assert rel(got, want) <= VALUE_RTOL, f"{kw} uniform: {got.item()!r} vs GeomLoss {want.item()!r}"


def gradients(loss, x0, y0, a0, b0, weights):
    x, y = as_tensors(x0, y0, requires_grad=True)
    a, b = as_tensors(a0, b0, requires_grad=weights)
    value = loss(a, x, b, y)
    value.backward()
    return value.detach(), x.grad, y.grad, a.grad, b.grad


@pytest.mark.parametrize("blur,scaling,debias", [(0.5, 0.5, True), (0.5, 0.5, False), (0.3, 0.9, True),
                                                 (1.0, 0.7, False)])
def test_gradients_equal_converged_geomloss(blur, scaling, debias):
    arrays = problem(2)
    kw = dict(p=2, blur=blur, scaling=scaling, debias=debias)
    with geomloss_extra_iterations(EXTRA_ITERS):
        want = gradients(geomloss.SamplesLoss("sinkhorn", backend="tensorized", **kw), *arrays, weights=True)
    got = gradients(fs.SamplesLoss("sinkhorn", iters=EXTRA_ITERS, threads=1, **kw), *arrays, weights=True)
    assert rel(got[0], want[0]) <= VALUE_RTOL, kw
    for name, g, w in zip(("x", "y", "a", "b"), got[1:], want[1:]):
        assert rel(g, w) <= GRAD_RTOL, f"{kw}: ∇{name} off by {rel(g, w):.2e} relative"


@pytest.mark.parametrize("debias", [True, False])
def test_unbalanced_gradients_differ_from_geomloss_by_its_factor(debias):
    arrays = problem(3)
    blur, reach = 1.0, 1.0
    eps, rho = blur**2, reach**2
    kw = dict(p=2, blur=blur, scaling=0.5, debias=debias, reach=reach)
    with geomloss_extra_iterations(EXTRA_ITERS):
        want = gradients(geomloss.SamplesLoss("sinkhorn", backend="tensorized", **kw), *arrays, weights=False)
    got = gradients(fs.SamplesLoss("sinkhorn", iters=EXTRA_ITERS, threads=1, **kw), *arrays, weights=False)
    assert rel(got[0], want[0]) <= VALUE_RTOL
    factor = (1 + eps / (2 * rho)) / (1 + eps / rho)
    for g, w in zip(got[1:3], want[1:3]):
        assert rel(factor * g, w) <= GRAD_RTOL


def test_potentials_equal_geomloss():
    x, y, a, b = as_tensors(*problem(4))
    kw = dict(p=2, blur=0.1, scaling=0.7, debias=False, potentials=True)
    F0, G0 = geomloss.SamplesLoss("sinkhorn", backend="tensorized", **kw)(a, x, b, y)
    F1, G1 = fs.SamplesLoss("sinkhorn", threads=1, **kw)(a, x, b, y)
    assert F1.shape == F0.shape == (1, a.shape[0]) and G1.shape == G0.shape == (1, b.shape[0])
    torch.testing.assert_close(F1, F0, rtol=0, atol=1e-10)
    torch.testing.assert_close(G1, G0, rtol=0, atol=1e-10)
    F0, G0 = geomloss.SamplesLoss("sinkhorn", backend="tensorized", **kw)(a[:, None], x, b[:, None], y)
    F1, G1 = fs.SamplesLoss("sinkhorn", threads=1, **kw)(a[:, None], x, b[:, None], y)  # (N, 1) weights
    assert F1.shape == F0.shape and G1.shape == G0.shape
    torch.testing.assert_close(F1, F0, rtol=0, atol=1e-10)


def test_batch_dimension():
    """A (B, N, D) batch is B problems: element k equals GeomLoss on (x[k], y[k]) when the diameter
    of that element is given (a batch shares the diameter of all its points), and, once both loops
    have converged, GeomLoss's batched call."""
    x, y, a, b = problem(5, batch=3)
    kw = dict(p=2, blur=0.5, scaling=0.6, debias=True)
    xt, yt, at, bt = as_tensors(x, y, a, b)
    xg = xt.clone().requires_grad_()
    got = fs.SamplesLoss("sinkhorn", threads=1, **kw)(at, xg, bt, yt)
    assert got.shape == (3,)
    diameter = geomloss_batch_diameter(xt, yt)
    for k in range(3):
        want = geomloss.SamplesLoss("sinkhorn", backend="tensorized", diameter=diameter, **kw)(at[k], xt[k], bt[k],
                                                                                                yt[k])
        assert rel(got[k], want) <= VALUE_RTOL, f"batch element {k}"
    got.sum().backward()
    assert xg.grad.shape == x.shape
    with geomloss_extra_iterations(EXTRA_ITERS):
        want = geomloss.SamplesLoss("sinkhorn", backend="tensorized", **kw)(at, xt, bt, yt)
    got = fs.SamplesLoss("sinkhorn", threads=1, iters=EXTRA_ITERS, **kw)(at, xt, bt, yt)
    assert want.shape == (3,) and rel(got, want) <= 1e-8
    got = fs.SamplesLoss("sinkhorn", threads=1, **kw)(xt, yt)  # uniform weights, batched
    assert got.shape == (3,)
    F, G = fs.SamplesLoss("sinkhorn", threads=1, potentials=True, **dict(kw, debias=False))(at, xt, bt, yt)
    assert F.shape == (3, x.shape[1]) and G.shape == (3, y.shape[1])


def geomloss_batch_diameter(x, y):
    from geomloss._legacy.sinkhorn_divergence import max_diameter

    return max_diameter(x.reshape(-1, x.shape[-1]), y.reshape(-1, y.shape[-1]))


def test_batch_schedule_equals_geomloss_before_convergence():
    x, y, a, b = as_tensors(*problem(5, batch=3))
    kw = dict(p=2, blur=0.2, scaling=0.6, debias=True)
    want = geomloss.SamplesLoss("sinkhorn", backend="tensorized", **kw)(a, x, b, y)
    got = fs.SamplesLoss("sinkhorn", threads=1, **kw)(a, x, b, y)
    assert rel(got, want) <= VALUE_RTOL
    # Problem by problem, each schedule from its own diameter: not GeomLoss's batched values.
    alone = torch.stack([fs.SamplesLoss("sinkhorn", threads=1, **kw)(a[k], x[k], b[k], y[k]) for k in range(3)])
    assert rel(alone, want) > 1e-6
    # NumPy batch: the same diameter, computed in NumPy.
    got = fs.SamplesLoss("sinkhorn", threads=1, **kw)(*(v.numpy() for v in (a, x, b, y)))
    assert rel(torch.as_tensor(got), want) <= VALUE_RTOL


DIAMETER_GRID = [(diameter, debias, reach) for diameter in (0.5, 3.0, 20.0) for debias in (True, False)
                 for reach in (None, 1.0)]


@pytest.mark.parametrize("diameter,debias,reach", DIAMETER_GRID)
def test_diameter_equals_geomloss(diameter, debias, reach):
    x, y, a, b = as_tensors(*problem(8))
    kw = dict(p=2, blur=0.1, scaling=0.7, debias=debias, reach=reach, diameter=diameter)
    want = geomloss.SamplesLoss("sinkhorn", backend="tensorized", **kw)(a, x, b, y)
    got = fs.SamplesLoss("sinkhorn", threads=1, **kw)(a, x, b, y)
    assert rel(got, want) <= VALUE_RTOL, f"{kw}: {got.item()!r} vs GeomLoss {want.item()!r}"
    default = fs.SamplesLoss("sinkhorn", threads=1, **dict(kw, diameter=None))(a, x, b, y)
    assert rel(default, want) > 1e-9, "diameter= did not reach the schedule"
    # A batch with diameter= given: that diameter for every problem, as in GeomLoss.
    xb, yb, ab, bb = as_tensors(*problem(9, batch=2))
    want = geomloss.SamplesLoss("sinkhorn", backend="tensorized", **kw)(ab, xb, bb, yb)
    got = fs.SamplesLoss("sinkhorn", threads=1, **kw)(ab, xb, bb, yb)
    assert got.shape == want.shape == (2,) and rel(got, want) <= VALUE_RTOL


@pytest.mark.parametrize("blur,scaling,reach", [(0.05, 0.5, None), (0.5, 0.9, None), (0.1, 0.7, 1.0)])
def test_debiased_potentials_equal_geomloss(blur, scaling, reach):
    """potentials=True, debias=True: (F, G) = (f_ab − f_aa, g_ab − g_bb), GeomLoss's formula."""
    x, y, a, b = as_tensors(*problem(10))
    kw = dict(p=2, blur=blur, scaling=scaling, reach=reach, debias=True, potentials=True)
    F0, G0 = geomloss.SamplesLoss("sinkhorn", backend="tensorized", **kw)(a, x, b, y)
    F1, G1 = fs.SamplesLoss("sinkhorn", threads=1, **kw)(a, x, b, y)
    assert F1.shape == F0.shape == (1, a.shape[0]) and G1.shape == G0.shape == (1, b.shape[0])
    torch.testing.assert_close(F1, F0, rtol=0, atol=1e-10)
    torch.testing.assert_close(G1, G0, rtol=0, atol=1e-10)
    # They are not the raw potentials: debias changes them.
    F2, _ = fs.SamplesLoss("sinkhorn", threads=1, **dict(kw, debias=False))(a, x, b, y)
    assert float((F2 - F1).abs().max()) > 1e-6
    # A batch, with GeomLoss's batched schedule.
    xb, yb, ab, bb = as_tensors(*problem(11, batch=3))
    F0, G0 = geomloss.SamplesLoss("sinkhorn", backend="tensorized", **kw)(ab, xb, bb, yb)
    F1, G1 = fs.SamplesLoss("sinkhorn", threads=1, **kw)(ab, xb, bb, yb)
    assert F1.shape == F0.shape == ab.shape and G1.shape == G0.shape == bb.shape
    torch.testing.assert_close(F1, F0, rtol=0, atol=1e-10)
    torch.testing.assert_close(G1, G0, rtol=0, atol=1e-10)


def test_numpy_inputs_and_float32():
    x, y, a, b = problem(6)
    value = fs.SamplesLoss("sinkhorn", blur=0.5, threads=1)(a, x, b, y)
    assert isinstance(value, float)
    want = geomloss.SamplesLoss("sinkhorn", blur=0.5, backend="tensorized")(*as_tensors(a, x, b, y)).item()
    assert value == pytest.approx(want, rel=VALUE_RTOL)
    x32, y32 = (torch.tensor(v, dtype=torch.float32) for v in (x, y))
    got = fs.SamplesLoss("sinkhorn", blur=0.5, threads=1)(x32, y32)
    assert got.dtype == torch.float32
    assert got.item() == pytest.approx(geomloss.SamplesLoss("sinkhorn", blur=0.5)(*as_tensors(x, y)).item(), rel=1e-4)


@pytest.mark.parametrize("kwargs,message", [
    (dict(loss="energy"), "loss='sinkhorn' only"),
    (dict(p=1), "p=2"),
    (dict(backend="multiscale"), "multiscale"),
    (dict(cost=lambda x, y: x), "custom cost"),
])
def test_unsupported_options_raise(kwargs, message):
    with pytest.raises(NotImplementedError, match=message):
        fs.SamplesLoss(**kwargs)


@pytest.mark.parametrize("reach,mass_a,mass_b", [(None, 2.0, 2.0), (1.0, 2.0, 2.0), (1.0, 0.5, 3.0)])
def test_unnormalised_weights_equal_geomloss(reach, mass_a, mass_b):
    """The masses are kept, as in GeomLoss (balanced problems with equal masses, any with a reach)."""
    x, y, a, b = as_tensors(*problem(7))
    kw = dict(p=2, blur=0.2, scaling=0.6, reach=reach)
    want = geomloss.SamplesLoss("sinkhorn", backend="tensorized", **kw)(mass_a * a, x, mass_b * b, y)
    got = fs.SamplesLoss("sinkhorn", threads=1, **kw)(mass_a * a, x, mass_b * b, y)
    assert rel(got, want) <= VALUE_RTOL, f"{kw}: {got.item()!r} vs GeomLoss {want.item()!r}"


def test_unequal_masses_without_reach_raise():
    x, y, a, b = as_tensors(*problem(7))
    with pytest.raises(fs.InvalidArgument, match="balanced OT needs equal masses"):
        fs.SamplesLoss()(2 * a, x, 3 * b, y)


def test_is_a_module_and_drop_in():
    loss = fs.SamplesLoss("sinkhorn", p=2, blur=0.05, scaling=0.5)
    assert isinstance(loss, torch.nn.Module)
    assert loss.eps == pytest.approx(0.0025)
