"""First oracle: the float64 dense reference of SPEC §1 (dense_reference.py) against the CLI.

fp64 runs are compared iterate for iterate (same number of half-steps from the same start g = 0),
so f, g, cost, primal_cost, marginal_error and transport_x must all agree to float64 round-off:
the library computes C through ‖x‖² + ‖y‖² − 2x·y on centred points, whose absolute error is
≲ (d + 3)·u₆₄·s·max(‖x‖² + ‖y‖²) ≈ 1e-14·max|C| here; each half-step is 1-Lipschitz in (C, g) in
the sup norm, so after k iterations ‖Δf‖∞ ≲ 2k·that. With k ≤ 200 this is < 1e-11·max|C|;
we allow RTOL64 = 1e-9 (relative to max|C|) — the "1e-9-ish" of the brief, with two orders of slack.
"""

import numpy as np
import pytest

import dense_reference as dr
from conftest import mean_cost, random_problem, rel_err

RTOL64 = 1e-9  # see the module docstring

SIZES = [  # (n, m, d): 1, odd, one past a tile, n ≠ m
    (1, 1, 3),
    (1, 37, 2),
    (37, 1, 1),
    (37, 41, 7),
    (65, 129, 3),
    (257, 63, 64),
]
SIZE_IDS = [f"n{n}-m{m}-d{d}" for n, m, d in SIZES]


def scale_of(prob):
    return max(float(np.abs(prob.c_exact).max()), 1e-300)


def assert_close_vec(got, want, atol, what, ctx):
    got = np.asarray(got, dtype=np.float64)
    assert got.shape == want.shape, f"[{ctx}] {what}: shape {got.shape} vs {want.shape}"
    err = float(np.max(np.abs(got - want))) if got.size else 0.0
    assert err <= atol, f"[{ctx}] {what}: max abs err {err:.3e} > {atol:.3e}"


def compare_to_dense(out, ref, prob, ctx, rtol=RTOL64, check_marginal=True, check_iterations=True):
    """Every output of a solve against the dense result `ref`."""
    scale = scale_of(prob)
    atol = rtol * scale
    assert abs(out.cost - ref.cost) <= atol, (
        f"[{ctx}] cost {out.cost!r} vs dense {ref.cost!r} (|Δ| {abs(out.cost - ref.cost):.3e} > {atol:.3e})")
    assert_close_vec(out.f, ref.f, atol, "f", ctx)
    assert_close_vec(out.g, ref.g, atol, "g", ctx)
    primal = float(out["primal_cost"])
    assert abs(primal - ref.primal_cost) <= atol, (
        f"[{ctx}] primal_cost {primal!r} vs dense ⟨P,C⟩ {ref.primal_cost!r}")
    if check_iterations:
        assert int(out["iterations"]) == ref.iterations, (
            f"[{ctx}] iterations {out['iterations']} vs {ref.iterations}")
    if check_marginal:
        # the error is Σ b_j|exp(Δg_j/ε) − 1| with Δg carrying the potentials' absolute error: its
        # own absolute error is ≈ atol/ε (plus relative round-off on its own size).
        me, me_ref = float(out["marginal_error"]), ref.marginal_error
        me_tol = 4 * atol / prob.eps + 1e-9 * me_ref
        assert abs(me - me_ref) <= me_tol, (
            f"[{ctx}] marginal_error {me!r} vs dense {me_ref!r} (tol {me_tol:.3e})")
    # T(x_i) = Σ_j softmax_j(score)·y_j: a score error δ = atol/ε moves the softmax weights by a
    # relative ≤ 2δ, hence |ΔT| ≤ 2δ·max_j‖y_j‖ (input coordinates); factor 2 slack.
    y_max = float(np.abs(prob.y_in).max()) + 1e-300
    assert_close_vec(out.transport_x, ref.transport_x, 4 * atol / prob.eps * y_max + 1e-14 * y_max,
                     "transport_x", ctx)


# ----------------------------------------------------------------------------- self-checks
def test_reference_matches_pot():
    """The dense reference itself against POT (no binary needed)."""
    ot = pytest.importorskip("ot")
    seed = 11
    x, y, a, b = random_problem(seed, 29, 33, 4)
    for s in (1.0, 0.5):
        eps = 0.1 * mean_cost(x, y, a, b, s)
        ref = dr.converged_alternating(x, y, a, b, eps, s, tol=1e-13)
        an, bn = a / a.sum(), b / b.sum()
        M = s * ot.dist(x, y)
        _, log = ot.sinkhorn(an, bn, M, eps, method="sinkhorn_log", numItermax=100000, stopThr=1e-14,
                             log=True)
        f = eps * (log["log_u"] - np.log(an))
        g = eps * (log["log_v"] - np.log(bn))
        assert rel_err(ref.cost, an @ f + bn @ g) < 1e-12, f"seed={seed} s={s}"
        c = float(an @ f) - float(an @ ref.f)
        np.testing.assert_allclose(ref.f, f - c, atol=1e-10 * M.max(), err_msg=f"seed={seed}")
        np.testing.assert_allclose(ref.g, g + c, atol=1e-10 * M.max(), err_msg=f"seed={seed}")
        P = ot.sinkhorn(an, bn, M, eps, method="sinkhorn_log", numItermax=100000, stopThr=1e-14)
        assert rel_err(ref.primal_cost, float(np.sum(P * M))) < 1e-10
        assert ref.marginal_error <= 1e-13


def test_reference_fixed_point_and_error_definition():
    """After one alternating iteration the columns are exact for (f, g_new); the marginal error of
    (f, g_prev) computed by formula equals the L1 distance of its column sums to b."""
    seed = 12
    x, y, a, b = random_problem(seed, 9, 13, 2)
    prob = dr.DenseProblem(x, y, a, b, eps=0.7)
    r2 = prob.alternating(2)
    r1 = prob.alternating(1)
    P = prob.a[:, None] * prob.b[None, :] * np.exp((r2.f[:, None] + r1.g[None, :] - prob.c_exact) / prob.eps)
    assert abs(np.abs(P.sum(0) - prob.b).sum() - r2.marginal_error) < 1e-14, f"seed={seed}"
    np.testing.assert_allclose(P.sum(1), prob.a, rtol=1e-13, err_msg=f"seed={seed}")


def test_reference_1d_w2_matches_emd():
    ot = pytest.importorskip("ot")
    seed = 13
    rng = np.random.default_rng(seed)
    x, y = rng.normal(size=(40, 1)), rng.normal(size=(55, 1)) * 0.7 + 0.5
    a, b = rng.random(40) + 0.1, rng.random(55) + 0.1
    w = dr.exact_w2_1d(x, y, a, b, s=0.5)
    assert rel_err(w, ot.emd2(a / a.sum(), b / b.sum(), 0.5 * ot.dist(x, y))) < 1e-10, f"seed={seed}"


@pytest.mark.parametrize("precision", ["fp32", "tf32", "bf16"])
def test_reduced_precision_bound_holds_for_naive(precision):
    """The error bound used below holds for the naive same-precision emulation (no binary)."""
    seed = 14
    x, y, a, b = random_problem(seed, 65, 37, 7)
    eps = 0.1 * mean_cost(x, y, a, b, 1.0)
    ref_prob = dr.DenseProblem(x, y, a, b, eps=eps)
    ref = ref_prob.alternating(300, tol=1e-13, check_every=1)
    low = dr.DenseProblem(x, y, a, b, eps=eps, precision=precision)
    naive = low.alternating(ref.iterations)
    bound = reduced_precision_bound(low, precision, ref_prob.plan(ref.f, ref.g))
    assert abs(naive.cost - ref.cost) <= bound, f"seed={seed}: {abs(naive.cost - ref.cost):.3e} > {bound:.3e}"


# ----------------------------------------------------------------------------- fp64 vs CLI
@pytest.mark.parametrize("iters", [1, 2, 7, 60])
@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
def test_alternating_fixed_iterations(run_solve, size, iters):
    n, m, d = size
    seed = 2000 + 31 * n + m + d
    s = 0.5 if (n + m) % 2 else 1.0
    x, y, a, b = random_problem(seed, n, m, d)
    eps = 0.1 * mean_cost(x, y, a, b, s)
    ctx = f"seed={seed} n={n} m={m} d={d} s={s} eps={eps:.6g} iters={iters}"
    prob = dr.DenseProblem(x, y, a, b, eps=eps, cost_scale=s)
    ref = prob.alternating(iters)
    out = run_solve(x, y, a, b, eps=eps, cost_scale=s, iters=iters, tol=0, precision="fp64", context=ctx)
    compare_to_dense(out, ref, prob, ctx)


def test_alternating_uniform_weights(run_solve):
    seed = 2101
    x, y, _, _ = random_problem(seed, 66, 45, 5, weights=False)
    eps = 0.05 * mean_cost(x, y, None, None, 1.0)
    ctx = f"seed={seed} uniform eps={eps:.6g}"
    prob = dr.DenseProblem(x, y, eps=eps)
    ref = prob.alternating(40)
    out = run_solve(x, y, eps=eps, iters=40, tol=0, precision="fp64", context=ctx)
    compare_to_dense(out, ref, prob, ctx)


def test_zero_weights_are_allowed(run_solve):
    """Weights may be 0 (log w = −∞ in the LSE): the masked points get no mass."""
    seed = 2102
    x, y, a, b = random_problem(seed, 20, 17, 3)
    a[[0, 5]] = 0.0
    b[[3]] = 0.0
    eps = 0.2 * mean_cost(x, y, a, b, 1.0)
    ctx = f"seed={seed} zero weights"
    prob = dr.DenseProblem(x, y, a, b, eps=eps)
    ref = prob.alternating(25)
    out = run_solve(x, y, a, b, eps=eps, iters=25, tol=0, precision="fp64", context=ctx)
    assert np.isfinite(out.cost), f"[{ctx}] cost {out.cost}"
    assert abs(out.cost - ref.cost) <= RTOL64 * scale_of(prob), f"[{ctx}] {out.cost} vs {ref.cost}"
    # potentials on zero-weight points are still well defined (the c-transform extends them)
    assert_close_vec(out.f, ref.f, RTOL64 * scale_of(prob), "f", ctx)
    assert_close_vec(out.g, ref.g, RTOL64 * scale_of(prob), "g", ctx)


def test_cosine_cost(run_solve):
    seed = 2103
    x, y, a, b = random_problem(seed, 41, 70, 9)
    eps = 0.05
    ctx = f"seed={seed} cosine eps={eps}"
    prob = dr.DenseProblem(x, y, a, b, eps=eps, cost="cosine")
    ref = prob.alternating(30)
    out = run_solve(x, y, a, b, eps=eps, cost="cosine", iters=30, tol=0, precision="fp64", context=ctx)
    compare_to_dense(out, ref, prob, ctx)
    # cosine = ½‖x̂ − ŷ‖² = 1 − cos: the dense C agrees with 1 − cos directly
    xn, yn = dr.row_normalise(x), dr.row_normalise(y)
    np.testing.assert_allclose(prob.c_exact, 1 - xn @ yn.T, atol=1e-12)


def test_alternating_converges_to_fixed_point(run_solve):
    """--tol stopping: the result is a fixed point; marginal_error ≤ tol; converged."""
    seed = 2104
    x, y, a, b = random_problem(seed, 101, 77, 4)
    eps = 0.1 * mean_cost(x, y, a, b, 1.0)
    ctx = f"seed={seed}"
    prob = dr.DenseProblem(x, y, a, b, eps=eps)
    ref = dr.converged_alternating(x, y, a, b, eps, tol=1e-13)
    out = run_solve(x, y, a, b, eps=eps, iters=100000, tol=1e-11, check_every=5, precision="fp64", context=ctx)
    assert out["converged"] is True and float(out["marginal_error"]) <= 1e-11, f"[{ctx}] {out.summary}"
    # |Δcost| ≲ marginal error × potential scale
    assert abs(out.cost - ref.cost) <= 1e-9 * scale_of(prob), f"[{ctx}] {out.cost} vs {ref.cost}"
    assert abs(float(out["primal_cost"]) - ref.primal_cost) <= 1e-9 * scale_of(prob), f"[{ctx}]"
    # iterations: a multiple of check_every (the stop is decided at a check) unless the last
    assert int(out["iterations"]) % 5 == 0, f"[{ctx}] iterations {out['iterations']} not at a check"


def test_alternating_with_eps_scaling(run_solve):
    """--solver alternating --scaling r: one alternating iteration per ε of GeomLoss's schedule,
    then --iters at the target ε (options.hpp: max_iterations counts after the schedule)."""
    seed = 2105
    x, y, a, b = random_problem(seed, 50, 61, 3)
    eps, r, iters = 0.01, 0.7, 5
    ctx = f"seed={seed} scaling={r} iters={iters}"
    prob = dr.DenseProblem(x, y, a, b, eps=eps, cost_scale=0.5)
    ref = prob.alternating(iters, scaling=r)
    out = run_solve(x, y, a, b, eps=eps, cost_scale=0.5, scaling=r, iters=iters, tol=0, precision="fp64",
                    context=ctx)
    compare_to_dense(out, ref, prob, ctx)


# ----------------------------------------------------------------------------- symmetric (GeomLoss loop)
@pytest.mark.parametrize("scaling,iters", [(0.5, 0), (0.8, 0), (0.5, 10), (None, 25)])
@pytest.mark.parametrize("debias", [False, True])
def test_symmetric_solver(run_solve, scaling, iters, debias):
    seed = 2200 + int(100 * (scaling or 0)) + iters
    x, y, a, b = random_problem(seed, 45, 66, 3)
    eps = 0.02
    ctx = f"seed={seed} scaling={scaling} iters={iters} debias={debias}"
    prob = dr.DenseProblem(x, y, a, b, eps=eps, cost_scale=0.5)
    ref = prob.symmetric(iters=iters, scaling=scaling, debias=debias)
    out = run_solve(x, y, a, b, eps=eps, cost_scale=0.5, solver="symmetric", scaling=scaling, iters=iters,
                    tol=0, precision="fp64", debias=debias, context=ctx)
    atol = RTOL64 * scale_of(prob)
    assert abs(out.cost - ref.cost) <= atol, f"[{ctx}] cost {out.cost!r} vs dense {ref.cost!r}"
    # f, g are the potentials of OT(a, b) (f_ba, g_ab), or, debiased, those minus f_aa, g_bb (GeomLoss's
    # potentials=True convention). Accept either, say which was found.
    f_ab, g_ab = ref.f, ref.g
    if debias:
        cands = {"OT(a,b)": (f_ab, g_ab), "debiased": (f_ab - ref.extra["f_aa"], g_ab - ref.extra["g_bb"])}
        errs = {k: max(np.abs(out.f - v[0]).max(), np.abs(out.g - v[1]).max()) for k, v in cands.items()}
        assert min(errs.values()) <= atol, f"[{ctx}] f/g match neither convention: {errs}"
    else:
        assert_close_vec(out.f, f_ab, atol, "f", ctx)
        assert_close_vec(out.g, g_ab, atol, "g", ctx)
        assert abs(float(out["primal_cost"]) - ref.primal_cost) <= atol, f"[{ctx}] primal"


# ----------------------------------------------------------------------------- unbalanced
@pytest.mark.parametrize("reach", [{"reach": 0.7}, {"reach_x": 0.5}, {"reach_y": 1.3}, {"reach_x": 0.4, "reach_y": 2.0}],
                         ids=["both", "x", "y", "xy"])
def test_unbalanced_alternating(run_solve, reach):
    seed = 2300 + len(reach)
    x, y, a, b = random_problem(seed, 38, 53, 2, shift=1.0)
    eps = 0.05
    ctx = f"seed={seed} {reach}"
    prob = dr.DenseProblem(x, y, a, b, eps=eps, **reach)
    ref = prob.alternating(40)
    out = run_solve(x, y, a, b, eps=eps, iters=40, tol=0, precision="fp64", context=ctx, **reach)
    compare_to_dense(out, ref, prob, ctx)


@pytest.mark.parametrize("debias", [False, True])
@pytest.mark.parametrize("scaling,iters", [(0.5, 0), (None, 30)])
def test_unbalanced_symmetric(run_solve, debias, scaling, iters):
    seed = 2400 + iters
    x, y, a, b = random_problem(seed, 40, 31, 3, shift=0.8)
    eps, reach = 0.03, 0.9
    ctx = f"seed={seed} reach={reach} debias={debias} scaling={scaling} iters={iters}"
    prob = dr.DenseProblem(x, y, a, b, eps=eps, cost_scale=0.5, reach=reach)
    ref = prob.symmetric(iters=iters, scaling=scaling, debias=debias)
    out = run_solve(x, y, a, b, eps=eps, cost_scale=0.5, solver="symmetric", scaling=scaling, iters=iters,
                    tol=0, precision="fp64", reach=reach, debias=debias, context=ctx)
    assert abs(out.cost - ref.cost) <= RTOL64 * scale_of(prob), f"[{ctx}] cost {out.cost!r} vs {ref.cost!r}"


# ----------------------------------------------------------------------------- debias (alternating)
def test_debias_alternating_at_convergence(run_solve):
    """At convergence the loop style does not matter: S = OT(a,b) − ½OT(a,a) − ½OT(b,b)."""
    seed = 2500
    x, y, a, b = random_problem(seed, 33, 47, 2)
    eps = 0.1
    ctx = f"seed={seed}"
    want = dr.debiased_converged(x, y, a, b, eps, tol=1e-13)
    out = run_solve(x, y, a, b, eps=eps, iters=100000, tol=1e-12, check_every=1, debias=True,
                    precision="fp64", context=ctx)
    scale = float(np.abs(dr.DenseProblem(x, y, a, b, eps=eps).c_exact).max())
    assert abs(out.cost - want) <= 1e-9 * scale, f"[{ctx}] S {out.cost!r} vs dense {want!r}"


# ----------------------------------------------------------------------------- reduced precision
def reduced_precision_bound(prob, precision, plan):
    """A bound on |OT_ε(C̃) − OT_ε(C)| derived from the rounding model (not fitted to results).
    OT_ε is a min over plans, so dOT = ⟨P, dC⟩ at the optimal plan P (envelope theorem).
      operands: each coordinate rounded to nearest, relative error δ ≤ u (u = 2^-11 TF32, 2^-8 BF16,
        2^-24 fp32), modelled as independent, mean 0, variance ≤ u²/3 (the standard probabilistic
        rounding model, Higham & Mary 2019). dC_ij = 2s(x_i − y_j)·(δx_i − δy_j), so
        ⟨P, dC⟩ = Σ_ik δx_ik x_ik·2s(a_i x_ik − (PY)_ik) − Σ_jk δy_jk y_jk·2s((PᵀX)_jk − b_j y_jk),
        a sum of independent terms: σ = u/√3·‖(x∘w_x, y∘w_y)‖₂; we allow 6σ (P(exceed) ≈ 2e-9).
        (Round-towards-zero would bias δ and is expected to fail this bound.)
      arithmetic: float32 norms and dot product (C via ‖x‖² + ‖y‖² − 2x·y) err ≲ √(d+3)·u₃₂·s(‖x‖+‖y‖)²
        averaged by P (no cancellation across (i, j) assumed); LSE/potential round-off 4·u₃₂·max|C|.
    Points are the centred ones the kernels see. Factor 2 on the arithmetic: stopping slack."""
    u = dr.UNIT_ROUNDOFF[precision]
    u32 = dr.UNIT_ROUNDOFF["fp32"]
    x, y, s = prob.x, prob.y, prob.s
    w_x = 2 * s * (prob.a[:, None] * x - plan @ y)    # (n, d) ∂OT/∂x
    w_y = 2 * s * (prob.b[:, None] * y - plan.T @ x)  # (m, d) ∂OT/∂y
    sigma = u / np.sqrt(3.0) * np.sqrt(np.sum((x * w_x) ** 2) + np.sum((y * w_y) ** 2))
    nx_, ny_ = np.linalg.norm(x, axis=1), np.linalg.norm(y, axis=1)
    d = x.shape[1]
    arithmetic = np.sqrt(d + 3) * u32 * s * float(np.sum(plan * (nx_[:, None] + ny_[None, :]) ** 2)) \
        + 4 * u32 * float(np.abs(prob.c_exact).max())
    return 6 * float(sigma) + 2 * arithmetic


@pytest.mark.parametrize("precision", ["fp32", "tf32", "bf16"])
@pytest.mark.parametrize("size", [(1, 37, 2), (65, 129, 7), (257, 63, 64)], ids=["n1-m37-d2", "n65-m129-d7", "n257-m63-d64"])
def test_reduced_precision(run_solve, size, precision):
    n, m, d = size
    seed = 2600 + n + m + d
    x, y, a, b = random_problem(seed, n, m, d)
    eps = 0.1 * mean_cost(x, y, a, b, 1.0)
    ctx = f"seed={seed} n={n} m={m} d={d} precision={precision}"
    prob = dr.DenseProblem(x, y, a, b, eps=eps)
    ref = prob.alternating(3000, tol=1e-13, check_every=1)  # converged float64 value
    low = dr.DenseProblem(x, y, a, b, eps=eps, precision=precision)
    naive = low.alternating(ref.iterations + 20)
    bound = reduced_precision_bound(low, precision, prob.plan(ref.f, ref.g))
    out = run_solve(x, y, a, b, eps=eps, iters=ref.iterations + 20, tol=0, precision=precision, context=ctx)
    err = abs(out.cost - ref.cost)
    assert err <= bound, (f"[{ctx}] |cost − OT_ε| = {err:.3e} > derived bound {bound:.3e} "
                          f"(naive same-precision error {abs(naive.cost - ref.cost):.3e})")
    assert np.isfinite(float(out["marginal_error"])), f"[{ctx}] {out.summary}"
    assert out.f.dtype == np.float32 and out.g.dtype == np.float32, f"[{ctx}] dtypes {out.f.dtype} {out.g.dtype}"
