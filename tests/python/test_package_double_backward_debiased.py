"""Second derivatives of the debiased value S_ε = OT_ε(a,X; b,Y) − ½OT_ε(a,X; a,X) − ½OT_ε(b,Y; b,Y).

H_S·(A, B) = H_OT·(A, B) − ½(H_T_a·A, H_T_b·B), H_T_a·A = u + v for (u, v) the joint product of
OT(a,X; a,X′) at (A, A), X′ = X (_hessians.DebiasedHessian). Oracles: gradgradcheck (float64,
central differences of the library's first derivatives) through `sinkhorn(debias=True)` and
SamplesLoss (one problem and a batch); fourth-order central differences of the forward's own
gradients; the same composition written out with Solver.hvp_xy; the replayed solves against the
forward's debiasing terms. Solves run to a marginal error of 1e-13, the HVPs' CG to 1e-10."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("flashsinkhorn._core")
torch = pytest.importorskip("torch")
import flashsinkhorn as fs  # noqa: E402
from flashsinkhorn._hessians import DebiasedHessian  # noqa: E402

from package_helpers import GRADGRAD, converged_kwargs, float64_tensors  # noqa: E402


def tensors(seed, n, m, d, requires_grad=False):
    return float64_tensors(seed, n, m, d, requires_grad)


SOLVES = [dict(eps=0.5), dict(eps=0.3, cost_scale=0.5, solver="symmetric", scaling=0.7)]
SOLVE_IDS = ["alternating", "symmetric s=0.5 scaling"]


@pytest.mark.parametrize("wrt", ["x", "y", "xy"])
@pytest.mark.parametrize("kwargs", SOLVES, ids=SOLVE_IDS)
def test_gradgradcheck_sinkhorn_debiased(wrt, kwargs):
    x, y, a, b = tensors(91, 7, 6, 2)
    x.requires_grad_("x" in wrt)
    y.requires_grad_("y" in wrt)
    options = converged_kwargs(debias=True, **kwargs)
    inputs = tuple(t for t in (x, y) if t.requires_grad)

    def value(*moving):
        points = dict(zip([name for name in "xy" if name in wrt], moving))
        return fs.sinkhorn(points.get("x", x), points.get("y", y), a, b, **options).cost

    # gradgradcheck draws random grad_outputs: the incoming grad_cost is not 1 here.
    assert torch.autograd.gradgradcheck(value, inputs, **GRADGRAD)


def samples_loss():
    """GeomLoss semantics (debias=True, C = ½‖x − y‖², ε = blur²) run to convergence."""
    return fs.SamplesLoss("sinkhorn", p=2, blur=0.7, debias=True, iters=100000, tol=1e-13, check_every=1, threads=1)


@pytest.mark.parametrize("wrt", ["x", "y", "xy"])
def test_gradgradcheck_samples_loss_debiased(wrt):
    rng = np.random.default_rng(111)
    x = torch.tensor(rng.normal(size=(5, 2)), requires_grad="x" in wrt)
    y = torch.tensor(rng.normal(size=(4, 2)) + 0.5, requires_grad="y" in wrt)
    a = torch.tensor(rng.uniform(0.5, 1.5, size=5))
    b = torch.tensor(rng.uniform(0.5, 1.5, size=4))
    a, b = a / a.sum(), b / b.sum()  # SamplesLoss keeps the masses: balanced needs Σa = Σb
    loss = samples_loss()
    inputs = tuple(t for t in (x, y) if t.requires_grad)

    def value(*moving):
        points = dict(zip([name for name in "xy" if name in wrt], moving))
        return loss(a, points.get("x", x), b, points.get("y", y))

    assert torch.autograd.gradgradcheck(value, inputs, **GRADGRAD)


def test_gradgradcheck_samples_loss_debiased_batch():
    """Each item of the batch has its own solves (and its own replays) under the batch's diameter."""
    x = torch.tensor(np.random.default_rng(101).normal(size=(2, 4, 2)), requires_grad=True)
    y = torch.tensor(np.random.default_rng(102).normal(size=(2, 3, 2)) + 0.5, requires_grad=True)
    loss = samples_loss()
    assert torch.autograd.gradgradcheck(lambda x, y: loss(x, y).sum(), (x, y), **GRADGRAD)


def self_term_product(points, weights, direction, options):
    """H_T·A of T(X) = OT(w,X; w,X): both outputs of the joint product at (A, A), added."""
    solver = fs.Solver(points, points, weights, weights, **dict(options, debias=False, solver="symmetric"))
    solver.solve()
    product = solver.hvp_xy(direction, direction, tol=1e-12)
    return product.product_x + product.product_y


def composed_product(x, y, a, b, A, B, options):
    """H_S·(A, B) = H_OT·(A, B) − ½(H_T_a·A, H_T_b·B), written out with Solver.hvp_xy."""
    cross = fs.Solver(x, y, a, b, **dict(options, debias=False))
    cross.solve()
    joint = cross.hvp_xy(A, B, tol=1e-12)
    return (joint.product_x - 0.5 * self_term_product(x, a, A, options),
            joint.product_y - 0.5 * self_term_product(y, b, B, options), joint)


@pytest.mark.parametrize("kwargs", SOLVES, ids=SOLVE_IDS)
def test_double_backward_equals_differences_of_the_gradient(kwargs):
    """grad(create_graph=True) then grad again = d/dt (∇_X S, ∇_Y S)(X + tA, Y + tB), the forward's own
    debiased gradients (Solver.gradient_x/y with debias=True) differenced to fourth order (h = 1e-3:
    truncation h⁴ ~ 1e-12, noise 1e-13/h ~ 1e-10 of max|·|); and = the composition by hand."""
    x, y, a, b = tensors(93, 9, 8, 3)
    rng = np.random.default_rng(94)
    A, B = (torch.tensor(rng.normal(size=t.shape)) for t in (x, y))
    options = converged_kwargs(debias=True, **kwargs)
    xs, ys = x.clone().requires_grad_(), y.clone().requires_grad_()
    gx, gy = torch.autograd.grad(fs.sinkhorn(xs, ys, a, b, **options).cost, (xs, ys), create_graph=True)
    hx, hy = torch.autograd.grad((gx * A).sum() + (gy * B).sum(), (xs, ys))

    def gradients(t):
        solver = fs.Solver(x + t * A, y + t * B, a, b, **options)
        solver.solve()
        return solver.gradient_x(), solver.gradient_y()

    h = 1e-3
    steps = [gradients(t * h) for t in (2, 1, -1, -2)]
    for k, got in enumerate((hx, hy)):
        differences = (8 * (steps[1][k] - steps[2][k]) - (steps[0][k] - steps[3][k])) / (12 * h)
        error = float((got - differences).abs().max() / differences.abs().max())
        assert error < 1e-8, f"side {'xy'[k]}: relative error {error:.2e} against fourth-order differences"

    want_x, want_y, plain = composed_product(x, y, a, b, A, B, options)
    # CG at 1e-10 in the backward vs 1e-12 here: agreement ~1e-10 of max|H_S·(A, B)|.
    torch.testing.assert_close(hx, want_x, rtol=0, atol=1e-9 * float(want_x.abs().max()))
    torch.testing.assert_close(hy, want_y, rtol=0, atol=1e-9 * float(want_y.abs().max()))
    # The test sees the self terms: they are a visible part of the product here.
    assert float((hx - plain.product_x).abs().max()) > 1e-2 * float(hx.abs().max())


@pytest.mark.parametrize("wrt", ["x", "y"])
def test_only_one_cloud_requires_grad_and_grad_cost(wrt):
    """L = S²: grad_cost = 2S depends on the moving cloud, ∂/∂X ⟨∇L, V⟩ = 2⟨∇S, V⟩∇S + 2S·H_S V;
    with only that cloud moving, the other side's self term never enters."""
    x, y, a, b = tensors(97, 6, 5, 2)
    moving = x if wrt == "x" else y
    moving.requires_grad_()
    options = converged_kwargs(eps=0.5, debias=True)
    cost = fs.sinkhorn(x, y, a, b, **options).cost
    (g,) = torch.autograd.grad(cost ** 2, moving, create_graph=True)
    v = torch.tensor(np.random.default_rng(98).normal(size=moving.shape))
    (h,) = torch.autograd.grad((g * v).sum(), moving)
    solver = fs.Solver(x.detach(), y.detach(), a, b, **options)
    value = float(solver.solve().cost)
    gradient = solver.gradient_x() if wrt == "x" else solver.gradient_y()
    A, B = (v, None) if wrt == "x" else (None, v)
    want_x, want_y, _ = composed_product(x.detach(), y.detach(), a, b, A if A is not None else torch.zeros_like(x),
                                         B if B is not None else torch.zeros_like(y), options)
    expected = 2 * (gradient * v).sum() * gradient + 2 * value * (want_x if wrt == "x" else want_y)
    torch.testing.assert_close(h, expected, rtol=0, atol=1e-9 * float(expected.abs().max()))


def test_torch_autograd_functional_hvp_debiased():
    """torch.autograd.functional.hvp differentiates the backward with respect to its direction: the
    debiased product again (H_S symmetric)."""
    x, y, a, b = tensors(99, 7, 6, 2)
    options = converged_kwargs(eps=0.5, debias=True)
    v = torch.tensor(np.random.default_rng(100).normal(size=x.shape))
    _, h = torch.autograd.functional.hvp(lambda x: fs.sinkhorn(x, y, a, b, **options).cost, x, v)
    expected, _, _ = composed_product(x, y, a, b, v, torch.zeros_like(y), options)
    torch.testing.assert_close(h, expected, rtol=0, atol=1e-9 * float(expected.abs().max()))


@pytest.mark.parametrize("kwargs", [
    # GeomLoss's default: the ε-schedule only (iters=0), unconverged — replayed to rounding.
    dict(eps=0.1, cost_scale=0.5, solver="symmetric", scaling=0.5, iters=0, tol=0.0, threads=1),
    converged_kwargs(eps=0.4),
    converged_kwargs(eps=0.3, solver="symmetric", scaling=0.7),
], ids=["geomloss schedule only", "alternating converged", "symmetric scaling converged"])
def test_replayed_solves_match_the_forward(kwargs):
    """The three plain solves behind the debiased product reproduce the forward's debiased gradients:
    ∇_X S = ∇_X OT(a,X; b,Y) − ∇_1 OT(a,X; a,X) (= −½∇T_a, the forward's debiasing term). The self
    solves run the forward's schedule from the joint diameter (with the one-cloud default the
    schedule-only case is off by ~4e-5 of max|∇|)."""
    x, y, a, b = tensors(110, 9, 7, 3)
    y = y + 0.7
    options = dict(kwargs, debias=True)
    forward = fs.Solver(x, y, a, b, **options)
    forward.solve()
    replays = DebiasedHessian(forward, x, y, a, b, options)
    cross, self_x, self_y = (replays._replay(which) for which in ("xy", "xx", "yy"))
    scale = float(forward.gradient_x().abs().max())
    torch.testing.assert_close(cross.gradient_x() - self_x.gradient_x(), forward.gradient_x(), rtol=0,
                               atol=1e-13 * scale)
    torch.testing.assert_close(cross.gradient_y() - self_y.gradient_y(), forward.gradient_y(), rtol=0,
                               atol=1e-13 * scale)


def test_debiased_outside_the_hvp_domain_raises():
    """Unbalanced (a reach) and cosine debiased values: the first derivative works, the second says why."""
    for kwargs, match in ((dict(reach=1.0), "unbalanced"), (dict(cost="cosine"), "cosine")):
        x, y, a, b = tensors(105, 6, 5, 2)
        x.requires_grad_()
        cost = fs.sinkhorn(x, y, a, b, **converged_kwargs(eps=0.5, debias=True, **kwargs)).cost
        (gx,) = torch.autograd.grad(cost, x, create_graph=True)
        with pytest.raises(NotImplementedError, match=match):
            torch.autograd.grad(gx.sum(), x)
