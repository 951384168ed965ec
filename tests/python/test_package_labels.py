"""The label-augmented (OTDD) cost from Python: fs.LabelCost through sinkhorn / Solver / autograd.

Oracles: a Euclidean W (squared distances of label points e_l) must give exactly the plain cost on
the augmented clouds [√λx·x, √λy·e_l]; a non-Euclidean W (−½JWJ indefinite) is checked against a
dense float64 log-domain Sinkhorn on C_ij = s(λx‖x_i − y_j‖² + λy·W[l_i, l_j]); gradients by
torch.autograd.gradcheck."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("flashsinkhorn._core")
import flashsinkhorn as fs  # noqa: E402

from package_helpers import converged_kwargs, random_problem  # noqa: E402


def labelled(seed, n, m, d, classes):
    x, y, a, b = random_problem(seed, n, m, d)
    rng = np.random.default_rng(seed + 1)
    return x, y, a, b, rng.integers(0, classes, n), rng.integers(0, classes, m)


def euclidean_w(classes, seed):
    e = np.random.default_rng(seed).normal(size=(classes, 2))
    return e, ((e[:, None, :] - e[None, :, :]) ** 2).sum(-1)


def indefinite_w(classes, seed):
    """Symmetric, zero diagonal, ≥ 0, with −½JWJ indefinite (checked)."""
    rng = np.random.default_rng(seed)
    w = rng.random((classes, classes)) * 3
    w = w + w.T
    np.fill_diagonal(w, 0)
    w[0, 1] = w[1, 0] = 30.0  # √30 > √W[0,2] + √W[2,1]: no Euclidean embedding
    j = np.eye(classes) - 1 / classes
    assert np.linalg.eigvalsh(-0.5 * j @ w @ j).min() < -1e-6
    return w


def logsumexp(z, axis):
    top = z.max(axis=axis, keepdims=True)
    return (top + np.log(np.exp(z - top).sum(axis=axis, keepdims=True))).squeeze(axis)


def dense_value(x, y, a, b, cost, eps, iters=20000):
    """Alternating log-domain Sinkhorn on a dense float64 cost; ⟨a, f⟩ + ⟨b, g⟩ at convergence."""
    a, b = a / a.sum(), b / b.sum()
    f, g = np.zeros(len(a)), np.zeros(len(b))
    for _ in range(iters):
        f = -eps * logsumexp((g[None, :] - cost) / eps + np.log(b)[None, :], axis=1)
        g_new = -eps * logsumexp((f[:, None] - cost) / eps + np.log(a)[:, None], axis=0)
        if np.max(np.abs(g_new - g)) < 1e-14:
            g = g_new
            break
        g = g_new
    return a @ f + b @ g


@pytest.mark.parametrize("weights", [(1.0, 1.0), (1.3, 0.7)])
def test_euclidean_w_is_the_plain_cost_on_augmented_points(weights):
    fw, lw = weights
    x, y, a, b, lx, ly = labelled(71, 12, 9, 3, 4)
    e, w = euclidean_w(4, 72)
    options = converged_kwargs(eps=0.5, cost_scale=0.5)
    with_labels = fs.Solver(x, y, a, b, labels=fs.LabelCost(lx, ly, w, fw, lw), **options)
    r = with_labels.solve()
    xa = np.hstack([np.sqrt(fw) * x, np.sqrt(lw) * e[lx]])
    ya = np.hstack([np.sqrt(fw) * y, np.sqrt(lw) * e[ly]])
    plain = fs.Solver(xa, ya, a, b, **options)
    p = plain.solve()
    assert r.cost == pytest.approx(p.cost, rel=1e-10)
    np.testing.assert_allclose(r.f, p.f, rtol=1e-9, atol=1e-10)
    # ∇x of the labelled cost = √λx · (the features' columns of ∇ on the augmented points).
    np.testing.assert_allclose(with_labels.gradient_x(), np.sqrt(fw) * plain.gradient_x()[:, :3], rtol=1e-8, atol=1e-12)


def test_indefinite_w_matches_a_dense_reference():
    x, y, a, b, lx, ly = labelled(73, 10, 8, 2, 5)
    w = indefinite_w(5, 74)
    s, eps, fw, lw = 0.5, 0.6, 1.0, 0.8
    r = fs.sinkhorn(x, y, a, b, labels=fs.LabelCost(lx, ly, w, fw, lw), **converged_kwargs(eps=eps, cost_scale=s))
    cost = s * (fw * ((x[:, None, :] - y[None, :, :]) ** 2).sum(-1) + lw * w[lx[:, None], ly[None, :]])
    assert r.cost == pytest.approx(dense_value(x, y, a, b, cost, eps), rel=1e-9)


torch = pytest.importorskip("torch")


def test_gradcheck_with_labels():
    x, y, a, b, lx, ly = labelled(75, 6, 5, 2, 3)
    w = indefinite_w(3, 76)
    labels = fs.LabelCost(torch.tensor(lx), torch.tensor(ly), torch.tensor(w), 1.0, 0.5)
    xt, yt = (torch.tensor(v, requires_grad=True) for v in (x, y))
    options = converged_kwargs(eps=0.5)

    def value(x, y):
        return fs.sinkhorn(x, y, torch.tensor(a), torch.tensor(b), labels=labels, **options).cost

    assert torch.autograd.gradcheck(value, (xt, yt), eps=1e-6, atol=1e-6, rtol=1e-5)


def test_bad_labels_are_named():
    x, y, a, b, lx, ly = labelled(77, 5, 4, 2, 3)
    _, w = euclidean_w(3, 78)
    with pytest.raises(fs.InvalidArgument, match="label"):
        fs.sinkhorn(x, y, a, b, eps=0.5, labels=fs.LabelCost(lx + 3, ly, w))
    with pytest.raises(ValueError, match="x_labels must hold integers"):
        fs.sinkhorn(x, y, a, b, eps=0.5, labels=fs.LabelCost(lx.astype(float) + 0.5, ly, w))
    with pytest.raises(fs.InvalidArgument):
        fs.sinkhorn(x, y, a, b, eps=0.5, labels=fs.LabelCost(lx, ly[:2], w))
