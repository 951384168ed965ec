"""torch.func through the streamed derivatives (SinkhornFunction and its Functions in the setup_context form).

Oracles: torch.autograd on the same loss (first order: the same streamed gradients, so equal to
rounding); Solver.hvp / Solver.hvp_xy for the HVPs of plain values and their composition
H_S·(A, B) = H_OT·(A, B) − ½(H_T_a·A, H_T_b·B) for debiased ones (expected_product); the closed form
2⟨∇F, v⟩∇F + 2F·Hv for a loss F². Both HVP routes — reverse-over-reverse vjp(grad(f)) and
forward-over-reverse jvp(grad(f)) — run the same joint product with CG to 1e-10 (float64); the
oracles run it to 1e-12, so they agree to ~1e-10 of max|H·v| (atol 1e-9 of it below). Solves run to
a marginal error of 1e-13. What has no exact derivative raises in forward mode as in reverse mode."""

from __future__ import annotations

import math

import numpy as np
import pytest

pytest.importorskip("flashsinkhorn._core")
torch = pytest.importorskip("torch")
import flashsinkhorn as fs  # noqa: E402
from torch.func import grad, grad_and_value, hessian, jacrev, jvp, vjp, vmap  # noqa: E402

from package_helpers import converged_kwargs, float64_tensors  # noqa: E402
from test_package_double_backward_debiased import self_term_product  # noqa: E402


def tensors(seed, n, m, d, requires_grad=False):
    return float64_tensors(seed, n, m, d, requires_grad)




def directions(seed, *like):
    rng = np.random.default_rng(seed)
    return tuple(torch.tensor(rng.normal(size=t.shape)) for t in like)


def close(got, want, scale=1e-9):
    """Agreement to `scale` of max|want| (the CG tolerances above), no relative part."""
    torch.testing.assert_close(got, want, rtol=0, atol=scale * float(want.abs().max()))


def expected_product(x, y, a, b, A, B, options):
    """(H·(A, B))_x, (H·(A, B))_y of the value by Solver.hvp_xy (B may be None: zero); debiased,
    H_S·(A, B) = H_OT·(A, B) − ½(H_T_a·A, H_T_b·B) written out (self_term_product)."""
    solver = fs.Solver(x, y, a, b, **dict(options, debias=False))
    solver.solve()
    joint = solver.hvp_xy(A, B, tol=1e-12)
    px, py = joint.product_x, joint.product_y
    if options.get("debias"):
        px = px - 0.5 * self_term_product(x, a, A, options)
        if B is not None:
            py = py - 0.5 * self_term_product(y, b, B, options)
    return px, py


DEBIAS = [False, True]
DEBIAS_IDS = ["plain", "debiased"]


@pytest.mark.parametrize("debias", DEBIAS, ids=DEBIAS_IDS)
def test_grad_and_grad_and_value_equal_autograd(debias):
    x, y, a, b = tensors(201, 7, 6, 2)
    options = converged_kwargs(eps=0.5, debias=debias)

    def value(x, y):
        return fs.sinkhorn(x, y, a, b, **options).cost

    gx, gy = grad(value, argnums=(0, 1))(x, y)
    (gxy, v) = grad_and_value(value, argnums=(0, 1))(x, y)
    xr, yr = x.clone().requires_grad_(), y.clone().requires_grad_()
    cost = value(xr, yr)
    ex, ey = torch.autograd.grad(cost, (xr, yr))
    # The same streamed gradients of the same solve: equal to rounding.
    for got, want in ((gx, ex), (gy, ey), (gxy[0], ex), (gxy[1], ey)):
        close(got, want, 1e-14)
    assert float(v) == float(cost.detach())


def test_grad_with_respect_to_weights_and_of_samples_loss():
    x, y, a, b = tensors(202, 6, 5, 2)
    options = converged_kwargs(eps=0.5)
    ga, gb = grad(lambda a, b: fs.sinkhorn(x, y, a, b, **options).cost, argnums=(0, 1))(a, b)
    ar, br = a.clone().requires_grad_(), b.clone().requires_grad_()
    ea, eb = torch.autograd.grad(fs.sinkhorn(x, y, ar, br, **options).cost, (ar, br))
    close(ga, ea, 1e-14)
    close(gb, eb, 1e-14)
    loss = fs.SamplesLoss("sinkhorn", p=2, blur=0.7, iters=100000, tol=1e-13, check_every=1, threads=1)
    xr = x.clone().requires_grad_()
    close(grad(lambda x: loss(x, y))(x), torch.autograd.grad(loss(xr, y), xr)[0], 1e-14)
    xs, ys = (torch.tensor(np.random.default_rng(203).normal(size=(2, k, 2))) for k in (4, 3))
    xsr = xs.clone().requires_grad_()  # a (B, N, D) batch: one solve per item, as in autograd
    close(grad(lambda x: loss(x, ys).sum())(xs), torch.autograd.grad(loss(xsr, ys).sum(), xsr)[0], 1e-14)


def test_grad_of_a_loss_of_the_potentials():
    """ḟ, ġ go through Solver.potential_vjp, as in torch.autograd; jacrev batches them (a loop)."""
    x, y, _, _ = tensors(204, 6, 5, 2)
    options = converged_kwargs(eps=0.5)

    def potential_loss(x):
        r = fs.sinkhorn(x, y, **options)
        return (r.f ** 2).sum() - (r.g ** 2).sum()

    def potentials(x):
        r = fs.sinkhorn(x, y, **options)
        return torch.stack(((r.f ** 2).sum() - (r.g ** 2).sum(), (r.f * r.f.mean()).sum() - (r.g * r.f.mean()).sum()))

    xr = x.clone().requires_grad_()
    close(grad(potential_loss)(x), torch.autograd.grad(potential_loss(xr), xr)[0], 1e-12)
    rows = jacrev(potentials)(x)
    for k in range(2):
        (want,) = torch.autograd.grad(potentials(xr)[k], xr)
        close(rows[k], want, 1e-12)


@pytest.mark.parametrize("wrt", ["x", "xy"])
@pytest.mark.parametrize("debias", DEBIAS, ids=DEBIAS_IDS)
def test_vjp_and_jvp_of_grad_are_the_hvp(wrt, debias):
    """Reverse-over-reverse vjp(grad(f))(v) and forward-over-reverse jvp(grad(f), v) = H·v."""
    x, y, a, b = tensors(205, 8, 7, 3)
    options = converged_kwargs(eps=0.4, debias=debias)
    A, B = directions(206, x, y)
    if wrt == "x":
        def value(x):
            return fs.sinkhorn(x, y, a, b, **options).cost

        px, _ = expected_product(x, y, a, b, A, None, options)
        (reverse,) = vjp(grad(value), x)[1](A)
        gradient, forward = jvp(grad(value), (x,), (A,))
        close(reverse, px)
        close(forward, px)
        close(gradient, grad(value)(x), 1e-14)
        return

    def value(x, y):
        return fs.sinkhorn(x, y, a, b, **options).cost

    px, py = expected_product(x, y, a, b, A, B, options)
    gradient_map = grad(value, argnums=(0, 1))
    reverse = vjp(gradient_map, x, y)[1]((A, B))
    _, forward = jvp(gradient_map, (x, y), (A, B))
    for got in (reverse, forward):
        close(got[0], px)
        close(got[1], py)


@pytest.mark.parametrize("debias", DEBIAS, ids=DEBIAS_IDS)
def test_hessian_of_a_tiny_problem(debias):
    """torch.func.hessian = jacfwd(jacrev(f)): one streamed product per column (the vmap rule loops),
    the solve done once (jacfwd repeats the primal along its batch). Its columns are Solver.hvp's."""
    x, y, a, b = tensors(207, 4, 3, 2)
    options = converged_kwargs(eps=0.5, debias=debias)
    H = hessian(lambda x: fs.sinkhorn(x, y, a, b, **options).cost)(x).reshape(8, 8)
    close(H, H.T, 1e-9)
    columns = torch.stack([expected_product(x, y, a, b, e.reshape(4, 2), None, options)[0].reshape(-1)
                           for e in torch.eye(8, dtype=torch.float64)], dim=1)
    close(H, columns)


def test_grad_cost_that_depends_on_x():
    """L = F²: jvp(grad L, v) = 2⟨∇F, v⟩∇F + 2F·H v (the product rule through grad_cost = 2F)."""
    x, y, a, b = tensors(208, 6, 5, 2)
    options = converged_kwargs(eps=0.5)
    (v,) = directions(209, x)
    square = lambda x: fs.sinkhorn(x, y, a, b, **options).cost ** 2  # noqa: E731
    solver = fs.Solver(x, y, a, b, **options)
    value = float(solver.solve().cost)
    gradient = solver.gradient_x()
    expected = 2 * (gradient * v).sum() * gradient + 2 * value * solver.hvp(v, tol=1e-12).product
    close(jvp(grad(square), (x,), (v,))[1], expected)
    close(vjp(grad(square), x)[1](v)[0], expected)


def test_forward_mode_first_order():
    """torch.func.jvp of the value: ⟨∇F, (Ẋ, Ẏ, ȧ)⟩ (envelope theorem); the potentials' tangents
    are not available and come back NaN, never a silent zero."""
    x, y, a, b = tensors(210, 6, 5, 2)
    options = converged_kwargs(eps=0.5)
    A, B, da = directions(211, x, y, a)
    solver = fs.Solver(x, y, a, b, **options)
    solver.solve()
    expected = (solver.gradient_x() * A).sum() + (solver.gradient_y() * B).sum() + (solver.gradient_a() * da).sum()
    _, tangent = jvp(lambda x, y, a: fs.sinkhorn(x, y, a, b, **options).cost, (x, y, a), (A, B, da))
    close(tangent, expected, 1e-13)
    _, tangent_f = jvp(lambda x: fs.sinkhorn(x, y, a, b, **options).f.sum(), (x,), (A,))
    assert math.isnan(float(tangent_f))


def test_vmap_of_one_problem_repeated_and_refusal_of_different_ones():
    x, y, _, _ = tensors(212, 5, 4, 2)
    options = converged_kwargs(eps=0.5)
    value = lambda x: fs.sinkhorn(x, y, **options).cost  # noqa: E731
    repeated = vmap(value)(x.expand(3, 5, 2))
    close(repeated, value(x).expand(3), 1e-15)
    with pytest.raises(NotImplementedError, match="different Sinkhorn problems"):
        vmap(value)(torch.stack((x, x + 1)))


# What has no exact derivative raises in forward mode too, and only when that derivative is asked for.

def test_refusals_under_torch_func():
    x, y, a, b = tensors(213, 6, 5, 2)
    options = converged_kwargs(eps=0.5)
    (v,) = directions(214, x)
    value = lambda x: fs.sinkhorn(x, y, a, b, **options).cost  # noqa: E731
    with pytest.raises(NotImplementedError, match="third derivatives"):
        jvp(lambda x: jvp(grad(value), (x,), (v,))[1], (x,), (v,))
    with pytest.raises(NotImplementedError, match="third derivatives"):
        vjp(lambda x: jvp(grad(value), (x,), (v,))[1], x)[1](v)
    with pytest.raises(NotImplementedError, match="mixed second derivatives"):
        jvp(lambda a: grad(lambda x: fs.sinkhorn(x, y, a, b, **options).cost)(x), (a,), (torch.ones_like(a),))
    unbalanced = lambda x: fs.sinkhorn(x, y, a, b, reach=1.0, **options).cost  # noqa: E731
    assert grad(unbalanced)(x).shape == x.shape  # first order: fine
    with pytest.raises(NotImplementedError, match="balanced"):
        jvp(grad(unbalanced), (x,), (v,))
    with pytest.raises(NotImplementedError, match="balanced"):
        jvp(grad(lambda x: fs.sinkhorn(x, y, a, b, reach=1.0, debias=True, **options).cost), (x,), (v,))

    def potential_loss(x):
        r = fs.sinkhorn(x, y, a, b, **options)
        return (r.f ** 2).sum() - (r.g ** 2).sum()

    with pytest.raises(NotImplementedError, match="potentials f, g"):
        jvp(grad(potential_loss), (x,), (v,))
    with pytest.raises(NotImplementedError, match="potentials f, g"):
        vjp(grad(potential_loss), x)[1](v)


def test_readme_torch_func_example():
    """The README's torch.func block runs as printed after its double-backward block (it reuses x, y)
    and both HVP routes give Solver.hvp's product."""
    import re

    from conftest import REPO

    blocks = re.findall(r"```python\n(.*?)```", (REPO / "README.md").read_text(), flags=re.DOTALL)
    (setup,) = [b for b in blocks if "create_graph=True" in b]
    (recipe,) = [b for b in blocks if "from torch.func import" in b]
    namespace: dict = {}
    torch.manual_seed(0)
    exec(compile(setup, "README.md (double backward)", "exec"), namespace)
    exec(compile(recipe, "README.md (torch.func)", "exec"), namespace)
    x, y, v = (namespace[k].detach() for k in ("x", "y", "v"))
    solver = fs.Solver(x, y, eps=0.1, tol=1e-9)
    solver.solve()
    close(namespace["g"], solver.gradient_x(), 1e-14)
    expected = solver.hvp(v, tol=1e-10).product
    close(namespace["hv"], expected, 1e-8)
    close(namespace["hv2"], expected, 1e-8)
