"""The optimisers from Python (fs.lanczos, fs.newton, fs.trust_region, Solver.lambda_min): Lanczos
against numpy.linalg.eigvalsh (random indefinite matrices, and the OT Hessian built column by column
from Solver.hvp), Newton-CG and the trust region on the 2-d Rosenbrock function and on a saddle,
and errors from the callables surfacing as Python exceptions."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest

pytest.importorskip("flashsinkhorn._core")
import flashsinkhorn as fs  # noqa: E402

from package_helpers import converged_kwargs, random_problem  # noqa: E402


@pytest.mark.parametrize("p", [1, 7, 40])
def test_lanczos_matches_eigvalsh(p):
    rng = np.random.default_rng(p)
    m = rng.normal(size=(p, p))
    a = m + m.T
    r = fs.lanczos(lambda v: a @ v, p, max_steps=p, tol=1e-12)
    eigenvalues = np.linalg.eigvalsh(a)
    assert r.lambda_min == pytest.approx(eigenvalues[0], abs=1e-8 * np.abs(eigenvalues).max())
    assert r.lambda_max == pytest.approx(eigenvalues[-1], abs=1e-8 * np.abs(eigenvalues).max())
    assert np.linalg.norm(r.ritz_vector_min) == pytest.approx(1.0)


def rosenbrock(theta):
    x, y = theta
    value = (1 - x) ** 2 + 100 * (y - x * x) ** 2
    gradient = np.array([-2 * (1 - x) - 400 * x * (y - x * x), 200 * (y - x * x)])
    return value, gradient


def rosenbrock_hvp(theta, v):
    x, y = theta
    h = np.array([[2 - 400 * (y - 3 * x * x), -400 * x], [-400 * x, 200.0]])
    return h @ v


@pytest.mark.parametrize("method", ["newton", "trust_region"])
def test_rosenbrock_reaches_the_minimiser(method):
    r = getattr(fs, method)(rosenbrock, rosenbrock_hvp, [-1.2, 1.0], tol=1e-10)
    assert r.status == "converged"
    np.testing.assert_allclose(r.theta, [1.0, 1.0], atol=1e-8)
    assert r.iterations == len(r.history) and r.evaluations[2] > 0


def test_trust_region_leaves_a_saddle():
    """f = x² − y² + y⁴/4 from next to the saddle (0, 0): the minimisers are (0, ±√2)."""
    def gradient(t):
        x, y = t
        return x * x - y * y + y ** 4 / 4, np.array([2 * x, -2 * y + y ** 3])

    def hvp(t, v):
        return np.array([2 * v[0], (-2 + 3 * t[1] ** 2) * v[1]])

    r = fs.trust_region(gradient, hvp, [1e-8, 1e-6], tol=1e-10)
    np.testing.assert_allclose(np.abs(r.theta), [0.0, np.sqrt(2)], atol=1e-7)
    assert any(step[5] for step in r.history)  # negative curvature met on the way


def test_trust_region_dense_model_takes_the_exact_step():
    """dense_model_dimension ≥ p: the Hessian by p products (H e_i) and the exact subproblem step — on a
    quadratic with a large radius the Newton step, one iteration of p products; on Rosenbrock the
    minimiser with p products per new iterate and none after a rejected step."""
    rng = np.random.default_rng(3)
    m = rng.normal(size=(6, 6))
    a = m @ m.T / 6 + 0.1 * np.eye(6)
    b = rng.normal(size=6)

    def quadratic(t):
        return 0.5 * t @ a @ t - b @ t, a @ t - b

    r = fs.trust_region(quadratic, lambda t, v: a @ v, np.zeros(6), radius=1e3, tol=1e-10, dense_model_dimension=6)
    assert r.iterations == 1 and r.evaluations[2] == 6
    np.testing.assert_allclose(r.theta, np.linalg.solve(a, b), rtol=1e-10)
    r = fs.trust_region(rosenbrock, rosenbrock_hvp, [-1.2, 1.0], tol=1e-10, dense_model_dimension=2)
    assert r.status == "converged"
    np.testing.assert_allclose(r.theta, [1.0, 1.0], atol=1e-8)
    products = [step[3] for step in r.history]
    accepted = [step[7] for step in r.history]
    assert products == [2 if i == 0 or accepted[i - 1] else 0 for i in range(len(products))]
    assert sum(products) == r.evaluations[2] and not all(accepted)


def test_hybrid_dense_model_checks_exactly_and_reuses_the_switch_hessian():
    r = fs.hybrid(double_well, double_well_hvp, [1e-3, 0.5], lr=0.05, check_every=5, tol=1e-10,
                  dense_model_dimension=2)
    assert r.status == "converged"
    np.testing.assert_allclose(np.abs(r.theta), [1.0, 0.0], atol=1e-8)
    # clearly negative checks certified by 1–2 Lanczos products (a Ritz value ≥ λ_min = min(3x² − 1, 1)),
    # the others exact: 2 products, residual 0
    first, last = r.lambda_trace[0], r.lambda_trace[-1]
    assert first.certified_negative and first.lanczos_steps <= 2 and first.lambda_min >= 3e-6 - 1 - 1e-12
    assert last.converged and last.residual == 0 and last.lanczos_steps == 2
    assert last.lambda_min == pytest.approx(3 * r.adam.theta[0] ** 2 - 1, abs=1e-12) and last.lambda_min > 0
    assert r.second_order.history[0][3] == 0  # the switch check's Hessian: no product
    assert r.evaluations[2] == sum(s.lanczos_steps for s in r.lambda_trace) + sum(step[3] for step in r.second_order.history)


def test_callback_errors_surface():
    def broken(theta):
        raise RuntimeError("broken gradient")

    with pytest.raises(RuntimeError, match="broken gradient"):
        fs.newton(broken, rosenbrock_hvp, [0.0, 0.0])
    with pytest.raises(fs.InvalidArgument, match="hvp returned 3 values"):
        fs.newton(rosenbrock, lambda t, v: np.zeros(3), [0.0, 0.0])


def test_solver_lambda_min_matches_the_dense_hessian():
    x, y, a, b = random_problem(91, 6, 5, 2)
    s = fs.Solver(x, y, a, b, **converged_kwargs(eps=0.3))
    s.solve()
    size = x.size
    columns = [s.hvp(np.eye(size)[k].reshape(x.shape), tol=1e-12).product.ravel() for k in range(size)]
    hessian = np.array(columns).T
    eigenvalues = np.linalg.eigvalsh(0.5 * (hessian + hessian.T))
    r = s.lambda_min(max_steps=size, tol=1e-10, hvp_tol=1e-12)
    assert r.lambda_min == pytest.approx(eigenvalues[0], abs=1e-7 * np.abs(eigenvalues).max())
    assert r.lambda_max == pytest.approx(eigenvalues[-1], abs=1e-7 * np.abs(eigenvalues).max())


def double_well(theta):
    """f = x⁴/4 − x²/2 + y²/2: a saddle at 0 (∇²f = diag(−1, 1)), minimisers (±1, 0) (∇²f = diag(2, 1))."""
    x, y = theta
    return x ** 4 / 4 - x * x / 2 + y * y / 2, np.array([x ** 3 - x, y])


def double_well_hvp(theta, v):
    return np.array([(3 * theta[0] ** 2 - 1) * v[0], v[1]])


@pytest.mark.parametrize("second_order", ["trust_region", "newton"])
def test_hybrid_leaves_the_saddle_then_switches(second_order):
    r = fs.hybrid(double_well, double_well_hvp, [1e-3, 0.5], lr=0.05, check_every=5, tol=1e-10,
                  second_order=second_order)
    assert r.status == "converged"
    np.testing.assert_allclose(np.abs(r.theta), [1.0, 0.0], atol=1e-8)
    first, last = r.lambda_trace[0], r.lambda_trace[-1]
    assert first.iteration == 0 and first.certified_negative and first.lambda_min == pytest.approx(-1.0, abs=1e-4)
    assert last.converged and last.lambda_min - last.residual > 0 and not last.certified_negative
    assert all(s.lambda_min < 0 for s in r.lambda_trace[:-1])  # Adam ran only while λ_min < 0
    assert r.switch_iteration == last.iteration > 0 and r.switch_iteration % 5 == 0
    assert r.adam.iterations == r.switch_iteration and r.second_order.status == "converged"
    assert r.gradient_norm <= 1e-10 and r.value == pytest.approx(-0.25)
    # every λ_min check costs Hessian products; the counts add up over the phases
    assert r.evaluations[2] >= sum(s.lanczos_steps for s in r.lambda_trace)
    assert r.evaluations[1] == r.adam.evaluations[1] + r.second_order.evaluations[1]


def test_hybrid_warm_lanczos_checks_cost_fewer_products():
    """f = −x²/2 + x⁴/4 + Σ_k (k+1)·y_k²/2 (p = 8): warm checks (the default) start at the last Ritz
    vector and certify λ_min < 0 in fewer Hessian products than fresh random starts; same verdicts."""
    scales = np.arange(2.0, 9.0)

    def gradient(t):
        return -t[0] ** 2 / 2 + t[0] ** 4 / 4 + 0.5 * scales @ t[1:] ** 2, np.r_[t[0] ** 3 - t[0], scales * t[1:]]

    def hvp(t, v):
        return np.r_[(3 * t[0] ** 2 - 1) * v[0], scales * v[1:]]

    start = np.r_[1e-3, np.full(7, 0.3)]
    runs = {warm: fs.hybrid(gradient, hvp, start, lr=0.02, check_every=5, tol=1e-10, adam_iters=2000,
                            warm_lanczos=warm) for warm in (True, False)}
    products = {warm: sum(s.lanczos_steps for s in r.lambda_trace[1:-1]) for warm, r in runs.items()}
    assert runs[True].switch_iteration == runs[False].switch_iteration > 0
    assert products[True] < products[False]
    for r in runs.values():
        np.testing.assert_allclose(np.abs(r.theta[0]), 1.0, atol=1e-8)


def test_hybrid_switches_at_once_on_a_convex_quadratic():
    a = np.diag([1.0, 4.0, 9.0])
    b = np.array([1.0, -2.0, 3.0])
    r = fs.hybrid(lambda t: (0.5 * t @ a @ t - b @ t, a @ t - b), lambda t, v: a @ v, np.zeros(3), tol=1e-12,
                  radius=10.0)
    assert r.switch_iteration == 0 and r.adam.iterations == 0 and len(r.lambda_trace) == 1
    assert r.lambda_trace[0].lambda_min == pytest.approx(1.0, rel=1e-3)
    np.testing.assert_allclose(r.theta, np.linalg.solve(a, b), atol=1e-10)


def test_hybrid_without_a_switch_reports_adam_alone():
    """f = −x²/2 + x⁴/4 + y²/2 from next to the saddle with too few Adam steps: no switch, no second phase."""
    r = fs.hybrid(double_well, double_well_hvp, [1e-3, 0.5], lr=0.01, adam_iters=3, check_every=1)
    assert r.switch_iteration == -1 and r.second_order is None and r.status == "max_iterations"
    assert r.adam.iterations == 3 and len(r.lambda_trace) == 4
    assert all(s.certified_negative for s in r.lambda_trace)


def test_adam_alone_minimises_a_quadratic():
    r = fs.adam(lambda t: (float(t @ t), 2 * t), [1.0, -2.0], lr=0.1, iters=2000, tol=1e-6)
    assert r.status == "converged" and np.linalg.norm(r.theta) < 1e-6
    assert r.iterations == len(r.history) and r.evaluations == (0, r.iterations + 1, 0)


@pytest.mark.parametrize("options, field", [
    (dict(check_every=0), "check_every"),
    (dict(lr=-1.0), "learning_rate"),
    (dict(negative_tol=0.0), "negative_tolerance"),
    (dict(switch_threshold=-1.0), "switch_threshold"),
    (dict(second_order="bfgs"), "second_order"),
    (dict(radius=-1.0), "initial_radius"),
    (dict(lanczos_steps=0), "max_steps"),
    (dict(max_seconds=0.0), "hybrid_options.max_seconds"),
    (dict(max_seconds=float("nan")), "hybrid_options.max_seconds"),
    (dict(check_gradient_norm=0.0), "check_gradient_norm"),
])
def test_hybrid_bad_options_name_the_field(options, field):
    with pytest.raises(fs.InvalidArgument, match=field):
        fs.hybrid(double_well, double_well_hvp, [0.5, 0.5], **options)


def slow_double_well(theta):
    time.sleep(0.02)
    return double_well(theta)


def test_hybrid_and_adam_stop_at_their_wall_time_budget_and_keep_their_trace():
    """A gradient of 20 ms, a 0.15 s budget and too small a learning rate to leave the saddle: the runs
    stop between iterations with status 'time_limit' (one iteration of overshoot at most), and the
    hybrid's λ_min samples survive (a budget raised from a callback would lose them)."""
    started = time.perf_counter()
    r = fs.hybrid(slow_double_well, double_well_hvp, [1e-3, 0.5], lr=1e-4, adam_iters=10_000, check_every=2,
                  max_seconds=0.15)
    assert time.perf_counter() - started < 0.15 + 0.1
    assert r.status == "time_limit" and r.switch_iteration == -1 and r.second_order is None
    assert 2 <= r.adam.iterations <= 10 and r.lambda_trace and r.lambda_trace[0].certified_negative
    a = fs.adam(slow_double_well, [1e-3, 0.5], lr=1e-4, iters=10_000, max_seconds=0.15)
    assert a.status == "time_limit" and 2 <= a.iterations <= 10 and len(a.history) == a.iterations
    for method in (fs.newton, fs.trust_region):
        assert method(rosenbrock_slow, rosenbrock_hvp, [-1.2, 1.0], max_seconds=0.1).status == "time_limit"
    with pytest.raises(fs.InvalidArgument, match="adam_options.max_seconds"):
        fs.adam(double_well, [0.5, 0.5], max_seconds=-1.0)


def rosenbrock_slow(theta):
    time.sleep(0.02)
    return rosenbrock(theta)


def test_hybrid_callback_errors_surface():
    with pytest.raises(fs.InvalidArgument, match="hvp returned 3 values"):
        fs.hybrid(double_well, lambda t, v: np.zeros(3), [0.5, 0.5])


def test_adam_resumed_from_its_state_equals_the_uninterrupted_run():
    quadratic = lambda t: (float(t @ t + t[0] * t[1]), 2 * t + t[::-1])  # noqa: E731
    whole = fs.adam(quadratic, [1.0, -2.0], lr=0.1, iters=40, tol=1e-14)
    first = fs.adam(quadratic, [1.0, -2.0], lr=0.1, iters=15, tol=1e-14)
    assert first.status == "max_iterations" and first.state.steps == 15
    # through JSON, as a checkpoint file would carry it
    state = fs.AdamState.from_dict(json.loads(json.dumps(first.state.to_dict())))
    second = fs.adam(quadratic, first.theta, lr=0.1, iters=40, tol=1e-14, state=state)
    assert second.iterations == 40 and len(second.history) == 25 and second.history[0][0] == 16
    np.testing.assert_array_equal(second.theta, whole.theta)
    np.testing.assert_array_equal(second.state.second, whole.state.second)
    with pytest.raises(fs.InvalidArgument, match="adam_moments"):
        fs.adam(quadratic, first.theta, state=fs.AdamState(np.zeros(3), np.zeros(3), 2))


def test_hybrid_resumed_from_its_state_switches_at_the_same_step():
    kwargs = dict(lr=0.05, check_every=5, tol=1e-10)
    whole = fs.hybrid(double_well, double_well_hvp, [1e-3, 0.5], **kwargs)
    assert whole.switch_iteration > 7
    first = fs.hybrid(double_well, double_well_hvp, [1e-3, 0.5], adam_iters=7, **kwargs)
    assert first.switch_iteration == -1 and first.state.adam.steps == 7 and first.state.checks == 2
    state = fs.HybridState.from_dict(json.loads(json.dumps(first.state.to_dict())))
    second = fs.hybrid(double_well, double_well_hvp, first.theta, resume=state, **kwargs)
    assert second.switch_iteration == whole.switch_iteration and second.lambda_trace[0].iteration == 10
    assert second.status == "converged" and second.state.switch_iteration == whole.switch_iteration
    np.testing.assert_allclose(second.theta, whole.theta, atol=1e-9)
    assert second.state.trust_radius > 0  # what a continuation after the switch would start from


def test_a_gated_hybrid_is_adam_alone_until_its_gate_and_continues_an_adam_run():
    """check_gradient_norm: checks only where ‖∇f‖ ≤ it; an Adam run that never met it continues as the
    gated hybrid through HybridState.after_adam (the state survives JSON, last_check included)."""
    kwargs = dict(lr=0.05, check_every=5, tol=1e-10)
    alone = fs.adam(double_well, [1e-3, 0.5], lr=0.05, iters=60, tol=1e-14)
    norms = [np.hypot(*double_well(np.array([1e-3, 0.5]))[1])] + [h[2] for h in alone.history]
    gate = 0.2
    first = next(k for k, g in enumerate(norms) if g <= gate)
    assert first > 5
    whole = fs.hybrid(double_well, double_well_hvp, [1e-3, 0.5], check_gradient_norm=gate, **kwargs)
    assert whole.lambda_trace[0].iteration == first and whole.state.last_check == whole.lambda_trace[-1].iteration
    assert all(b.iteration - a.iteration >= 5 for a, b in zip(whole.lambda_trace, whole.lambda_trace[1:]))
    assert whole.status == "converged"
    np.testing.assert_allclose(np.abs(whole.theta), [1.0, 0.0], atol=1e-8)

    cut = fs.adam(double_well, [1e-3, 0.5], lr=0.05, iters=first - 1, tol=1e-14)
    state = fs.HybridState.from_dict(json.loads(json.dumps(fs.HybridState.after_adam(cut.state).to_dict())))
    assert state.checks == 0 and state.last_check == -1 and state.adam.steps == first - 1
    continued = fs.hybrid(double_well, double_well_hvp, cut.theta, check_gradient_norm=gate, resume=state, **kwargs)
    assert [s.iteration for s in continued.lambda_trace] == [s.iteration for s in whole.lambda_trace]
    assert continued.switch_iteration == whole.switch_iteration
    np.testing.assert_allclose(continued.theta, whole.theta, atol=1e-9)
    older = whole.state.to_dict()
    del older["last_check"]  # a state saved before the field existed: no check known, the next is due
    assert fs.HybridState.from_dict(older).last_check == -1


def test_a_gated_hybrid_checks_at_start_when_asked():
    """check_at_start: a check at θ_0 outside the gate (λ_min = −1 at the double well's saddle side),
    then the gated schedule; the same switch and end point as without it."""
    kwargs = dict(lr=0.05, check_every=5, tol=1e-10, check_gradient_norm=0.05)
    plain = fs.hybrid(double_well, double_well_hvp, [1e-3, 0.5], **kwargs)
    r = fs.hybrid(double_well, double_well_hvp, [1e-3, 0.5], check_at_start=True, **kwargs)
    assert plain.lambda_trace[0].iteration > 0  # the gate keeps θ_0 out
    first = r.lambda_trace[0]
    assert first.iteration == 0 and first.certified_negative and first.lambda_min < 0
    assert r.lambda_trace[1].iteration >= 5 and r.switch_iteration == plain.switch_iteration
    np.testing.assert_allclose(r.theta, plain.theta, atol=1e-10)


def test_hybrid_forcing_max_asks_for_near_exact_newton_steps():
    """A convex quadratic (the hybrid switches at once): with forcing_max tiny the trust region's inner CG
    solves H s = −g exactly and one step lands on the minimiser; the default (η ≤ 0.9) takes more."""
    rng = np.random.default_rng(3)
    q = np.linalg.qr(rng.normal(size=(8, 8)))[0]
    a = q @ np.diag(np.geomspace(1.0, 100.0, 8)) @ q.T
    b = rng.normal(size=8)
    quadratic = lambda t: (float(0.5 * t @ a @ t - b @ t), a @ t - b)  # noqa: E731
    kwargs = dict(tol=1e-9, radius=100.0)
    loose = fs.hybrid(quadratic, lambda t, v: a @ v, np.zeros(8), **kwargs)
    tight = fs.hybrid(quadratic, lambda t, v: a @ v, np.zeros(8), forcing_max=1e-12, **kwargs)
    assert loose.switch_iteration == tight.switch_iteration == 0
    assert tight.status == loose.status == "converged"
    assert tight.second_order.iterations == 1 < loose.second_order.iterations
    np.testing.assert_allclose(tight.theta, np.linalg.solve(a, b), atol=1e-9)
    with pytest.raises(fs.InvalidArgument, match=r"trust_region_options\.forcing"):
        fs.hybrid(quadratic, lambda t, v: a @ v, np.zeros(8), forcing_max=0.0)


def test_a_callback_stop_ends_adam_at_its_last_step_and_the_state_resumes_it():
    quadratic = lambda t: (float(t @ t + t[0] * t[1]), 2 * t + t[::-1])  # noqa: E731
    calls = [0]

    def stopping(t):
        calls[0] += 1
        if calls[0] == 12:  # step 11's evaluation (call 1 is θ₀'s)
            raise fs.StopOptimization("budget")
        return quadratic(t)

    whole = fs.adam(quadratic, [1.0, -2.0], lr=0.1, iters=40, tol=1e-14)
    ten = fs.adam(quadratic, [1.0, -2.0], lr=0.1, iters=10, tol=1e-14)
    stopped = fs.adam(stopping, [1.0, -2.0], lr=0.1, iters=40, tol=1e-14)
    assert stopped.status == "stopped" and stopped.iterations == 10 == stopped.state.steps
    np.testing.assert_array_equal(stopped.theta, ten.theta)
    rest = fs.adam(quadratic, stopped.theta, lr=0.1, iters=40, tol=1e-14, state=stopped.state)
    np.testing.assert_array_equal(rest.theta, whole.theta)
    with pytest.raises(fs.StopOptimization, match="budget"):  # nothing to return at θ₀
        calls[0] = 11
        fs.adam(stopping, [1.0, -2.0], lr=0.1, iters=40)


def test_a_callback_stop_inside_a_hybrid_check_is_made_again_by_the_continuation():
    kwargs = dict(lr=0.05, check_every=5, tol=1e-10)
    whole = fs.hybrid(double_well, double_well_hvp, [1e-3, 0.5], **kwargs)
    products = [0]
    first_two_checks = whole.lambda_trace[0].lanczos_steps + whole.lambda_trace[1].lanczos_steps

    def stopping_hvp(t, v):
        products[0] += 1
        if products[0] == first_two_checks + 1:  # inside the check at Adam step 10
            raise fs.StopOptimization("budget")
        return double_well_hvp(t, v)

    stopped = fs.hybrid(double_well, stopping_hvp, [1e-3, 0.5], **kwargs)
    assert stopped.status == "stopped" and stopped.state.adam.steps == 10 and stopped.state.checks == 2
    rest = fs.hybrid(double_well, double_well_hvp, stopped.theta, resume=stopped.state, **kwargs)
    assert rest.lambda_trace[0].iteration == 10 and rest.switch_iteration == whole.switch_iteration
    np.testing.assert_allclose(rest.theta, whole.theta, atol=1e-9)
