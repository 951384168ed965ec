"""Third oracle: mathematical facts — invariances, closed forms, bounds, finite differences.

All in fp64 unless stated. Tolerances are stated next to each assertion with their reason;
`scale` is max|C| (the size of the potentials), round-off of a fixed number of fp64 iterations on
it is ≲ 1e-13·scale (see test_dense_reference.py), so invariances that hold exactly in exact
arithmetic are checked to 1e-10·scale.
"""

import numpy as np
import pytest

import dense_reference as dr
from conftest import mean_cost, random_problem, rel_err

EXACT = 1e-10  # exact-in-exact-arithmetic identities, relative to max|C| (fp64 round-off + 1000× slack)


def cmax(x, y, s=1.0):
    return float(np.max(s * ((x[:, None, :] - y[None, :, :]) ** 2).sum(-1)))


def converged(run_solve, x, y, a=None, b=None, ctx="", **flags):
    flags.setdefault("precision", "fp64")
    out = run_solve(x, y, a, b, iters=20000, tol=1e-13, check_every=1, context=ctx, **flags)
    assert out["converged"] is True, f"[{ctx}] not converged: {out.summary}"
    return out


# ----------------------------------------------------------------------------- invariances
@pytest.mark.parametrize("precision,shift,tol", [
    ("fp64", 100.0, EXACT),
    # fp32 on data translated by 1e3: without centring, ‖x‖² ≈ 1e6·d and C = ‖x‖²+‖y‖²−2x·y would lose
    # ~6 of float32's 7 digits; with centring (SPEC §2) the error stays at fp32 level: 1e-5·scale.
    ("fp32", 1000.0, 1e-5),
])
def test_translation_invariance(run_solve, precision, shift, tol):
    seed = 4001
    x, y, a, b = random_problem(seed, 40, 57, 3)
    eps = 0.1 * mean_cost(x, y, a, b, 1.0)
    t = shift * np.array([1.0, -0.5, 0.25])
    ctx = f"seed={seed} shift={shift} precision={precision}"
    base = run_solve(x, y, a, b, eps=eps, iters=50, tol=0, precision=precision, context=ctx)
    moved = run_solve(x + t, y + t, a, b, eps=eps, iters=50, tol=0, precision=precision, context=ctx)
    scale = cmax(x, y)
    assert abs(base.cost - moved.cost) <= tol * scale, f"[{ctx}] {base.cost!r} vs translated {moved.cost!r}"
    np.testing.assert_allclose(moved.transport_x, base.transport_x + t, atol=tol * scale * 10, err_msg=ctx)


def test_permutation_invariance(run_solve):
    seed = 4002
    rng = np.random.default_rng(seed)
    x, y, a, b = random_problem(seed, 65, 37, 4)
    eps = 0.1 * mean_cost(x, y, a, b, 1.0)
    px, py = rng.permutation(65), rng.permutation(37)
    ctx = f"seed={seed}"
    base = run_solve(x, y, a, b, eps=eps, iters=40, tol=0, context=ctx, precision="fp64")
    perm = run_solve(x[px], y[py], a[px], b[py], eps=eps, iters=40, tol=0, context=ctx, precision="fp64")
    scale = cmax(x, y)
    # same iterates up to summation order: EXACT
    assert abs(base.cost - perm.cost) <= EXACT * scale, f"[{ctx}] {base.cost!r} vs {perm.cost!r}"
    np.testing.assert_allclose(perm.f, base.f[px], atol=EXACT * scale, err_msg=ctx)
    np.testing.assert_allclose(perm.g, base.g[py], atol=EXACT * scale, err_msg=ctx)
    np.testing.assert_allclose(perm.transport_x, base.transport_x[px], atol=1e-9 * scale, err_msg=ctx)


def test_swap_symmetry(run_solve):
    """OT_ε(a, b) = OT_ε(b, a) with f ↔ g (at convergence: the loop itself is not symmetric)."""
    seed = 4003
    x, y, a, b = random_problem(seed, 50, 33, 2)
    eps = 0.1 * mean_cost(x, y, a, b, 1.0)
    ctx = f"seed={seed}"
    ab = converged(run_solve, x, y, a, b, eps=eps, ctx=ctx)
    ba = converged(run_solve, y, x, b, a, eps=eps, ctx=ctx)
    scale = cmax(x, y)
    # marginal error 1e-13 → value error ≲ 1e-13·scale: 1e-10·scale
    assert abs(ab.cost - ba.cost) <= EXACT * scale, f"[{ctx}] {ab.cost!r} vs swapped {ba.cost!r}"
    an = a / a.sum()
    shift = float(an @ ab.f - an @ ba.g)  # the gauge
    np.testing.assert_allclose(ba.g + shift, ab.f, atol=1e-9 * scale, err_msg=ctx)
    np.testing.assert_allclose(ba.f - shift, ab.g, atol=1e-9 * scale, err_msg=ctx)
    # the primal ⟨P, C⟩ too (the plan is the same at convergence)
    assert abs(float(ab["primal_cost"]) - float(ba["primal_cost"])) <= 1e-9 * scale, f"[{ctx}]"


@pytest.mark.parametrize("factor", [0.25, 3.0])
def test_homogeneity(run_solve, factor):
    """(C, ε) → (cC, cε) maps every iterate f → cf exactly (the updates are homogeneous), so cost → c·cost:
    checked both through --cost-scale and through scaling the points by √c."""
    seed = 4004
    x, y, a, b = random_problem(seed, 37, 65, 5)
    s, eps = 0.5, 0.1 * mean_cost(x, y, a, b, 0.5)
    ctx = f"seed={seed} factor={factor}"
    base = run_solve(x, y, a, b, eps=eps, cost_scale=s, iters=30, tol=0, precision="fp64", context=ctx)
    by_s = run_solve(x, y, a, b, eps=factor * eps, cost_scale=factor * s, iters=30, tol=0, precision="fp64",
                     context=ctx)
    by_x = run_solve(np.sqrt(factor) * x, np.sqrt(factor) * y, a, b, eps=factor * eps, cost_scale=s, iters=30,
                     tol=0, precision="fp64", context=ctx)
    scale = factor * cmax(x, y, s)
    for name, out in (("cost_scale", by_s), ("points", by_x)):
        assert abs(out.cost - factor * base.cost) <= EXACT * scale, f"[{ctx}] via {name}: {out.cost!r} vs {factor * base.cost!r}"
        np.testing.assert_allclose(out.f, factor * base.f, atol=EXACT * scale, err_msg=f"{ctx} {name}")
        assert abs(float(out["marginal_error"]) - float(base["marginal_error"])) <= 1e-8, f"[{ctx}] {name}"


# ----------------------------------------------------------------------------- closed forms
@pytest.mark.parametrize("precision,tol", [
    ("fp64", 1e-14),  # a few float64 roundings of s‖x − y‖²
    ("fp32", 1e-6),   # ~8 float32 roundings (u = 6e-8) on centred points: 1e-6 relative
])
@pytest.mark.parametrize("s", [1.0, 0.5])
def test_single_points(run_solve, precision, tol, s):
    """n = m = 1: P = [[1]], f + g = C, so OT_ε = ⟨P, C⟩ = s‖x − y‖² for every ε, after one iteration."""
    seed = 4005
    rng = np.random.default_rng(seed)
    x, y = rng.normal(size=(1, 6)), rng.normal(size=(1, 6))
    want = s * float(np.sum((x - y) ** 2))
    for eps in (1e-3, 1.0, 1e3):
        ctx = f"seed={seed} s={s} eps={eps} precision={precision}"
        out = run_solve(x, y, eps=eps, cost_scale=s, iters=1, tol=0, precision=precision, context=ctx)
        assert rel_err(out.cost, want) <= tol, f"[{ctx}] cost {out.cost!r} vs s‖x−y‖² {want!r}"
        assert rel_err(float(out["primal_cost"]), want) <= tol, f"[{ctx}] primal {out['primal_cost']!r}"
        # f and g each carry a rounding of size u·C, amplified by 1/ε inside exp((g − g')/ε) − 1
        u = dr.UNIT_ROUNDOFF[precision]
        me_tol = 8 * u * want / eps + 4 * u
        assert float(out["marginal_error"]) <= me_tol, f"[{ctx}] marginal error {out['marginal_error']} > {me_tol:.2e}"
        np.testing.assert_allclose(out.transport_x, y, rtol=tol, atol=tol, err_msg=ctx)


@pytest.mark.parametrize("d", [1, 3])
def test_large_eps_expansion(run_solve, d):
    """ε → ∞: P → a⊗b and OT_ε = E_{a⊗b}[C] − 2s²·tr(Σ_a Σ_b)/ε + O(ε⁻²), where Σ are the weighted
    covariances (the part of C not absorbed by f and g is −2s(x−x̄)·(y−ȳ), of second moment 4s²tr(Σ_aΣ_b)).
    The remainder is bounded by E|C̃|³/ε² (third cumulant of C̃ = −2s(x−x̄)·(y−ȳ); measured ≤ 2% of it)."""
    seed = 4006 + d
    x, y, a, b = random_problem(seed, 30, 41, d)
    s = 1.0
    an, bn = a / a.sum(), b / b.sum()
    xc, yc = x - an @ x, y - bn @ y
    sig_a, sig_b = xc.T @ (xc * an[:, None]), yc.T @ (yc * bn[:, None])
    c_tilde = -2 * s * xc @ yc.T
    third = float(an @ np.abs(c_tilde) ** 3 @ bn)
    mean_c = mean_cost(x, y, a, b, s)
    for k in (10.0, 30.0):
        eps = k * float(np.abs(c_tilde).max())
        ctx = f"seed={seed} d={d} eps={eps:.4g}"
        out = converged(run_solve, x, y, a, b, eps=eps, cost_scale=s, ctx=ctx)
        want = mean_c - 2 * s * s * float(np.trace(sig_a @ sig_b)) / eps
        assert abs(out.cost - want) <= third / eps**2, (
            f"[{ctx}] cost {out.cost!r} vs E[C] − 2s²tr(ΣaΣb)/ε = {want!r}: |Δ| {abs(out.cost - want):.3e} > {third / eps**2:.3e}")


@pytest.mark.parametrize("rel_eps", [0.01, 0.05])
def test_1d_sandwich_around_w2(run_solve, rel_eps):
    """d = 1: OT_0 (monotone coupling, exact) ≤ ⟨P_ε, C⟩ ≤ OT_ε ≤ OT_0 + ε·min(H(a), H(b)),
    because OT_ε = ⟨P_ε,C⟩ + ε·KL(P_ε‖a⊗b) ≤ ⟨P_0,C⟩ + ε·KL(P_0‖a⊗b) and KL(P‖a⊗b) is a mutual
    information ≤ min of the entropies."""
    seed = 4008
    x, y, a, b = random_problem(seed, 37, 52, 1, shift=1.0)
    s = 0.5
    w2 = dr.exact_w2_1d(x, y, a, b, s)
    eps = rel_eps * mean_cost(x, y, a, b, s)
    ctx = f"seed={seed} eps={eps:.4g} OT_0={w2!r}"
    out = converged(run_solve, x, y, a, b, eps=eps, cost_scale=s, ctx=ctx)
    an, bn = a / a.sum(), b / b.sum()
    entropy = min(-(an @ np.log(an)), -(bn @ np.log(bn)))
    slack = 1e-10 * cmax(x, y, s)  # convergence to 1e-13 marginal error
    primal = float(out["primal_cost"])
    assert w2 - slack <= primal, f"[{ctx}] primal {primal!r} < OT_0"
    assert primal <= out.cost + slack, f"[{ctx}] primal {primal!r} > OT_ε {out.cost!r}"
    assert out.cost <= w2 + eps * entropy + slack, f"[{ctx}] OT_ε {out.cost!r} > OT_0 + εH = {w2 + eps * entropy!r}"


# ----------------------------------------------------------------------------- gradients
@pytest.mark.parametrize("s", [1.0, 0.5])
def test_gradient_matches_finite_differences(run_solve, s):
    """Envelope theorem at convergence: ∇_{x_i} OT_ε = 2s·(a_i x_i − Σ_j P_ij y_j) = 2s·a_i·(x_i − T(x_i))
    with T = transport_x. Central differences with h = 1e-5: truncation O(h²·|∂³OT|) ≈ 1e-10,
    round-off ≈ 1e-16·|cost|/h ≈ 1e-11 — tolerance 1e-6·max|∇| (and the cost must be printed with
    ~17 significant digits for this to work)."""
    seed = 4010
    rng = np.random.default_rng(seed)
    n, m, d = 20, 25, 3
    x, y, a, b = random_problem(seed, n, m, d)
    an = a / a.sum()
    eps = 0.5 * mean_cost(x, y, a, b, s)
    iters = 400  # ε = ½E[C]: the marginal error falls below 1e-15 long before
    ctx = f"seed={seed} s={s} eps={eps:.4g}"
    base = run_solve(x, y, a, b, eps=eps, cost_scale=s, iters=iters, tol=0, precision="fp64", context=ctx)
    assert float(base["marginal_error"]) < 1e-13, f"[{ctx}] not converged: {base.summary}"
    grad = 2 * s * an[:, None] * (x - base.transport_x)
    h = 1e-5
    coords = [(int(rng.integers(n)), int(rng.integers(d))) for _ in range(4)]
    for i, k in coords:
        xp, xm = x.copy(), x.copy()
        xp[i, k] += h
        xm[i, k] -= h
        cp = run_solve(xp, y, a, b, eps=eps, cost_scale=s, iters=iters, tol=0, precision="fp64", out=False,
                       context=ctx).cost
        cm = run_solve(xm, y, a, b, eps=eps, cost_scale=s, iters=iters, tol=0, precision="fp64", out=False,
                       context=ctx).cost
        fd = (cp - cm) / (2 * h)
        tol = 1e-6 * float(np.abs(grad).max())
        assert abs(fd - grad[i, k]) <= tol, (
            f"[{ctx}] ∂cost/∂x[{i},{k}]: finite difference {fd!r} vs 2s·a_i(x_i − T_i) {grad[i, k]!r} (tol {tol:.2e})")


# ----------------------------------------------------------------------------- Sinkhorn divergence
@pytest.mark.parametrize("solver", ["symmetric", "alternating"])
def test_debiased_identical_clouds_is_zero(run_solve, solver):
    seed = 4011
    x, _, a, _ = random_problem(seed, 45, 1, 3)
    # symmetric: small ε through the schedule. Alternating Sinkhorn on identical clouds converges only
    # sublinearly at small ε (the plan is nearly diagonal: 1e-7 marginal error after 5e4 iterations at
    # ε = 0.05), so it is checked at ε = 1 (≈ E[C]/3), where it reaches 1e-13 in ~170 iterations.
    eps = 0.05 if solver == "symmetric" else 1.0
    ctx = f"seed={seed} solver={solver}"
    if solver == "symmetric":
        out = run_solve(x, x.copy(), a, a.copy(), eps=eps, cost_scale=0.5, solver="symmetric", scaling=0.5, iters=0,
                        tol=0, debias=True, precision="fp64", context=ctx)
        # OT(a,b) and OT(a,a) run the very same loop on the same matrix: round-off only
        tol = 1e-12 * cmax(x, x, 0.5)
    else:
        out = converged(run_solve, x, x.copy(), a, a.copy(), eps=eps, cost_scale=0.5, debias=True, ctx=ctx)
        tol = EXACT * cmax(x, x, 0.5)  # converged to 1e-13 marginal error
    assert abs(out.cost) <= tol, f"[{ctx}] S_ε(α, α) = {out.cost!r}, expected 0 (tol {tol:.2e})"


@pytest.mark.parametrize("rel_eps", [0.01, 0.1, 1.0])
def test_sinkhorn_divergence_nonnegative(run_solve, rel_eps):
    """S_ε(α, β) ≥ 0 (Feydy et al. 2019, Thm 1: e^{−C/ε} is a positive universal kernel for the
    squared Euclidean cost), and > 0 for α ≠ β. Checked at convergence."""
    seed = 4012 + int(100 * rel_eps)
    x, y, a, b = random_problem(seed, 40, 35, 2, shift=0.2)
    eps = rel_eps * mean_cost(x, y, a, b, 1.0)
    ctx = f"seed={seed} eps={eps:.4g}"
    out = converged(run_solve, x, y, a, b, eps=eps, debias=True, ctx=ctx)
    assert out.cost > 0, f"[{ctx}] S_ε = {out.cost!r} ≤ 0"
    want = dr.debiased_converged(x, y, a, b, eps, tol=1e-13)
    assert abs(out.cost - want) <= EXACT * cmax(x, y), f"[{ctx}] S_ε {out.cost!r} vs dense {want!r}"
