"""Second derivatives through torch.autograd (double backward = the joint streamed HVP, Solver.hvp_xy).

gradgradcheck (float64, central differences of the library's first derivatives) for x only, y only,
x and y, through `sinkhorn` and SamplesLoss's batch path; grad(create_graph=True) then grad again
equals Solver.hvp / Solver.hvp_xy; grad_output ≠ 1 (a loss of cost²); torch.autograd.functional.hvp;
and the clear errors where no exact second derivative exists (unbalanced, weights, third order);
debiased values in test_package_double_backward_debiased.py, torch.func in test_package_torch_func.py.
Solves run to a marginal error of 1e-13, the HVP's CG to 1e-10 (float64)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("flashsinkhorn._core")
torch = pytest.importorskip("torch")
import flashsinkhorn as fs  # noqa: E402

from package_helpers import GRADGRAD, converged_kwargs, float64_tensors, random_problem  # noqa: E402


def tensors(seed, n, m, d, requires_grad=False):
    return float64_tensors(seed, n, m, d, requires_grad)




@pytest.mark.parametrize("wrt", ["x", "y", "xy"])
@pytest.mark.parametrize("kwargs", [dict(eps=0.5), dict(eps=0.3, cost_scale=0.5, solver="symmetric", scaling=0.7)],
                         ids=["alternating", "symmetric s=0.5"])
def test_gradgradcheck(wrt, kwargs):
    x, y, a, b = tensors(91, 7, 6, 2)
    x.requires_grad_("x" in wrt)
    y.requires_grad_("y" in wrt)
    options = converged_kwargs(**kwargs)
    inputs = tuple(t for t in (x, y) if t.requires_grad)

    def value(*moving):
        points = dict(zip([name for name in "xy" if name in wrt], moving))
        return fs.sinkhorn(points.get("x", x), points.get("y", y), a, b, **options).cost

    # gradgradcheck draws random grad_outputs: the incoming grad_cost is not 1 here.
    assert torch.autograd.gradgradcheck(value, inputs, **GRADGRAD)


def test_gradgradcheck_sizes_one_and_uniform_weights():
    x, y, _, _ = tensors(92, 1, 5, 3)
    x.requires_grad_()
    y.requires_grad_()
    options = converged_kwargs(eps=0.4)
    assert torch.autograd.gradgradcheck(lambda x, y: fs.sinkhorn(x, y, **options).cost, (x, y), **GRADGRAD)


def test_double_backward_equals_solver_hvp():
    x, y, a, b = tensors(93, 9, 8, 3)
    x.requires_grad_()
    y.requires_grad_()
    options = converged_kwargs(eps=0.4)
    cost = fs.sinkhorn(x, y, a, b, **options).cost
    gx, gy = torch.autograd.grad(cost, (x, y), create_graph=True)
    rng = np.random.default_rng(94)
    A, B = (torch.tensor(rng.normal(size=t.shape)) for t in (x, y))
    hx, hy = torch.autograd.grad((gx * A).sum() + (gy * B).sum(), (x, y), retain_graph=True)
    solver = fs.Solver(x.detach(), y.detach(), a, b, **options)
    solver.solve()
    joint = solver.hvp_xy(A, B, tol=1e-12)
    # The same streamed product, CG at 1e-10 in backward vs 1e-12 here: agreement ~1e-10 of max|H·(A, B)|.
    torch.testing.assert_close(hx, joint.product_x, rtol=0, atol=1e-9 * float(joint.product_x.abs().max()))
    torch.testing.assert_close(hy, joint.product_y, rtol=0, atol=1e-9 * float(joint.product_y.abs().max()))
    # Only gx in the second loss: H_xx A on x (Solver.hvp) and the cross block H_yx A on y.
    hx_only, hy_cross = torch.autograd.grad((gx * A).sum(), (x, y))
    torch.testing.assert_close(hx_only, solver.hvp(A, tol=1e-12).product, rtol=0,
                               atol=1e-9 * float(hx_only.abs().max()))
    torch.testing.assert_close(hy_cross, solver.hvp_xy(A, None, tol=1e-12).product_y, rtol=0,
                               atol=1e-9 * float(hy_cross.abs().max()))


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_float32_double_backward_on_a_sharp_plan_converges(device):
    """float32 tensors, a plan close to a matching (300 × 64, ε = 0.1, 10 iterations): the double
    backward's joint product takes the sparse preconditioner, whose CG falls short in fp32 and is
    redone on float64 passes (docs/math.md); no warning, and the product is Solver.hvp_xy's in float64
    passes on the same solve (the diagonal preconditioner stops unconverged there: 4e-5 after 1,000
    iterations at 1,000 × 64). On CUDA tensors the solve and the passes run on their GPU, the redo
    on a float64 CUDA backend (skipped without one)."""
    import warnings

    if device == "cuda" and not (torch.cuda.is_available() and fs.cuda_available()):
        pytest.skip("needs a CUDA device and a CUDA build of flashsinkhorn")
    generator = torch.Generator().manual_seed(3)
    x, y, direction = (torch.randn(300, 64, generator=generator).to(device) for _ in range(3))
    x.requires_grad_()
    options = dict(eps=0.1, iters=10, tol=0, device=device, threads=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a CG that stops short warns
        gx, = torch.autograd.grad(fs.sinkhorn(x, y, **options).cost, x, create_graph=True)
        hx, = torch.autograd.grad((gx * direction).sum(), x)
    solver = fs.Solver(x.detach(), y, **options)
    solver.solve()
    want = solver.hvp_xy(direction, None, y=False, tol=1e-6, iters=1000, preconditioner="sparse")
    assert want.converged and want.redone_in_float64
    torch.testing.assert_close(hx, want.product_x, rtol=0, atol=1e-5 * float(want.product_x.abs().max()))


@pytest.mark.parametrize("wrt", ["x", "y"])
def test_only_one_cloud_requires_grad(wrt):
    x, y, a, b = tensors(95, 8, 7, 2)
    moving = x if wrt == "x" else y
    moving.requires_grad_()
    options = converged_kwargs(eps=0.5)
    cost = fs.sinkhorn(x, y, a, b, **options).cost
    (g,) = torch.autograd.grad(cost, moving, create_graph=True)
    v = torch.tensor(np.random.default_rng(96).normal(size=moving.shape))
    (h,) = torch.autograd.grad((g * v).sum(), moving)
    solver = fs.Solver(x.detach(), y.detach(), a, b, **options)
    solver.solve()
    expected = solver.hvp(v, wrt=wrt, tol=1e-12).product
    torch.testing.assert_close(h, expected, rtol=0, atol=1e-9 * float(expected.abs().max()))


def test_grad_cost_that_depends_on_x():
    """L = cost²: grad_cost = 2·cost depends on x, so ∂/∂x ⟨∇L, v⟩ = 2⟨∇F, v⟩∇F + 2F·H v."""
    x, y, a, b = tensors(97, 6, 5, 2)
    x.requires_grad_()
    options = converged_kwargs(eps=0.5)
    cost = fs.sinkhorn(x, y, a, b, **options).cost
    (g,) = torch.autograd.grad(cost ** 2, x, create_graph=True)
    v = torch.tensor(np.random.default_rng(98).normal(size=x.shape))
    (h,) = torch.autograd.grad((g * v).sum(), x)
    solver = fs.Solver(x.detach(), y, a, b, **options)
    value = float(solver.solve().cost)
    gradient = solver.gradient_x()
    expected = 2 * (gradient * v).sum() * gradient + 2 * value * solver.hvp(v, tol=1e-12).product
    torch.testing.assert_close(h, expected, rtol=0, atol=1e-9 * float(expected.abs().max()))


def test_torch_autograd_functional_hvp():
    """torch.autograd.functional.hvp differentiates the backward with respect to its direction:
    that derivative is the HVP again (_HessianProduct), so it works too."""
    x, y, a, b = tensors(99, 7, 6, 2)
    options = converged_kwargs(eps=0.5)
    v = torch.tensor(np.random.default_rng(100).normal(size=x.shape))
    _, h = torch.autograd.functional.hvp(lambda x: fs.sinkhorn(x, y, a, b, **options).cost, x, v)
    solver = fs.Solver(x, y, a, b, **options)
    solver.solve()
    expected = solver.hvp(v, tol=1e-12).product
    torch.testing.assert_close(h, expected, rtol=0, atol=1e-9 * float(expected.abs().max()))


def test_samples_loss_batch_gradgradcheck():
    x = torch.tensor(np.random.default_rng(101).normal(size=(2, 5, 2)), requires_grad=True)
    y = torch.tensor(np.random.default_rng(102).normal(size=(2, 4, 2)) + 0.5, requires_grad=True)
    loss = fs.SamplesLoss("sinkhorn", p=2, blur=0.7, debias=False, iters=100000, tol=1e-13, check_every=1, threads=1)
    assert torch.autograd.gradgradcheck(lambda x, y: loss(x, y).sum(), (x, y), **GRADGRAD)


def test_hvp_xy_matches_differences_of_the_gradients():
    x, y, a, b = random_problem(103, 8, 7, 3)
    rng = np.random.default_rng(104)
    A, B = rng.normal(size=x.shape), rng.normal(size=y.shape)
    options = converged_kwargs(eps=0.5)

    def gradients(t):
        s = fs.Solver(x + t * A, y + t * B, a, b, **options)
        s.solve()
        return s.gradient_x(), s.gradient_y()

    s = fs.Solver(x, y, a, b, **options)
    s.solve()
    product = s.hvp_xy(A, B, tol=1e-12)
    assert product.converged and product.cg_iterations > 0
    h = 1e-5  # central differences: truncation ~1e-10, noise 1e-13/h ~ 1e-8 of max|H·(A, B)|
    for got, up, down in zip((product.product_x, product.product_y), gradients(h), gradients(-h)):
        differences = (up - down) / (2 * h)
        np.testing.assert_allclose(got, differences, rtol=0, atol=1e-6 * np.abs(differences).max())
    only_x = s.hvp_xy(A, None, y=False, tol=1e-12)
    assert only_x.product_y is None
    np.testing.assert_allclose(only_x.product_x, s.hvp(A, tol=1e-12).product, rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match="dx, dy"):
        s.hvp_xy(None, None)
    with pytest.raises(fs.InvalidArgument):
        s.hvp_xy(A[:-1], B)


# What has no exact second derivative says so, and only when that derivative is asked for.

def first_gradients(seed=105, **kwargs):
    x, y, a, b = tensors(seed, 6, 5, 2)
    x.requires_grad_()
    cost = fs.sinkhorn(x, y, a, b, **converged_kwargs(**kwargs)).cost
    (gx,) = torch.autograd.grad(cost, x, create_graph=True)
    return x, gx


def test_unbalanced_double_backward_raises():
    x, gx = first_gradients(eps=0.5, reach=1.0)
    with pytest.raises(NotImplementedError, match="balanced"):
        torch.autograd.grad(gx.sum(), x)


def test_weights_requiring_grad():
    x, y, a, b = tensors(106, 6, 5, 2)
    x.requires_grad_()
    a.requires_grad_()
    options = converged_kwargs(eps=0.5)
    cost = fs.sinkhorn(x, y, a, b, **options).cost
    gx, ga = torch.autograd.grad(cost, (x, a), create_graph=True)
    v = torch.tensor(np.random.default_rng(107).normal(size=x.shape))
    (h,) = torch.autograd.grad((gx * v).sum(), x, retain_graph=True)  # in x alone: exact
    solver = fs.Solver(x.detach(), y, a.detach(), b, **options)
    solver.solve()
    expected = solver.hvp(v, tol=1e-12).product
    torch.testing.assert_close(h, expected, rtol=0, atol=1e-9 * float(expected.abs().max()))
    with pytest.raises(NotImplementedError, match="mixed second derivatives"):
        torch.autograd.grad((gx * v).sum(), a, retain_graph=True)
    with pytest.raises(NotImplementedError, match="weights a, b"):
        torch.autograd.grad(ga.sum(), x)


def test_third_derivative_and_potential_losses_raise():
    x, gx = first_gradients(eps=0.5)
    v = torch.ones_like(x)
    (h,) = torch.autograd.grad((gx * v).sum(), x, create_graph=True)
    with pytest.raises(NotImplementedError, match="third derivatives"):
        torch.autograd.grad(h.sum(), x)
    x, y, _, _ = tensors(108, 6, 5, 2)
    x.requires_grad_()
    r = fs.sinkhorn(x, y, **converged_kwargs(eps=0.5))
    (g,) = torch.autograd.grad((r.f ** 2).sum() - (r.g ** 2).sum(), x, create_graph=True)
    with pytest.raises(NotImplementedError, match="potentials f, g"):
        torch.autograd.grad(g.sum(), x)


def test_readme_double_backward_example():
    """The README's double-backward block runs as printed and gives Solver.hvp_xy's product."""
    import re

    from conftest import REPO

    blocks = [b for b in re.findall(r"```python\n(.*?)```", (REPO / "README.md").read_text(), flags=re.DOTALL)
              if "create_graph=True" in b]
    assert len(blocks) == 1, "README.md should hold exactly one double-backward example"
    namespace: dict = {}
    torch.manual_seed(0)
    exec(compile(blocks[0], "README.md (double backward)", "exec"), namespace)
    x, y, A, B = (namespace[k].detach() for k in ("x", "y", "A", "B"))
    solver = fs.Solver(x, y, eps=0.1, tol=1e-9)
    solver.solve()
    expected = solver.hvp_xy(A, B, tol=1e-10)
    for got, want in ((namespace["hx"], expected.product_x), (namespace["hy"], expected.product_y)):
        torch.testing.assert_close(got, want, rtol=0, atol=1e-8 * float(want.abs().max()))
