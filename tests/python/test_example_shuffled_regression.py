"""examples/shuffled_regression on the CPU at tiny n, so that the example cannot rot: the data recipe,
∇_W L against central differences of L(W) = OT_ε(XW, Y), H_W·V against central differences of ∇_W L,
a hybrid run that lowers the loss and reports its λ_min trace, the forcing term of inexact gradients,
the driver writing its JSON (and PNGs when matplotlib is importable), and two single-run calls joined
by merge.py."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("flashsinkhorn._core")

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "shuffled_regression"
sys.path.insert(0, str(EXAMPLE))

from regression_data import make_data  # noqa: E402
from regression_loss import BudgetExhausted, ShuffledRegressionLoss  # noqa: E402
from regression_runs import compare, run_adam, run_hybrid  # noqa: E402


def tight_loss(data, eps=0.5, **kw):
    """Converged far below the finite-difference steps' error (float64 on the CPU)."""
    return ShuffledRegressionLoss(data.x, data.y, eps, tol=1e-13, iters=100000, hvp_tol=1e-12, warm_start=False, **kw)


def test_data_is_the_known_recipe():
    d = make_data()
    assert d.x.shape == (500, 5) and d.y.shape == (500, 2) and d.w_star.shape == (5, 2)
    assert np.bincount(d.blob).tolist() == [167, 167, 166]
    for blob, std in enumerate((0.3, 0.05, 0.6)):
        assert d.x[d.blob == blob].std(axis=0).mean() == pytest.approx(std, rel=0.2)
    residual = d.y - (d.x @ d.w_star)[d.permutation]  # y = Π*(XW*) + σE
    assert residual.std() == pytest.approx(0.2, rel=0.15)
    again = make_data()
    np.testing.assert_array_equal(again.y, d.y)
    np.testing.assert_array_equal(again.w0, d.w0)
    assert not np.array_equal(make_data(seed=3).x, d.x)


@pytest.mark.parametrize("n", [37, 64])
def test_gradient_matches_finite_differences(n):
    data = make_data(n=n, seed=5)
    loss = tight_loss(data)
    theta = data.w0.ravel()
    value, grad = loss.gradient(theta)
    h = 1e-5
    fd = np.empty_like(theta)
    for k in range(theta.size):
        e = np.zeros_like(theta)
        e[k] = h
        fd[k] = (loss.gradient(theta + e)[0] - loss.gradient(theta - e)[0]) / (2 * h)
    print(f"seed 5, n {n}: L = {value}, max |∇ − fd| = {np.abs(grad - fd).max()}, |∇| = {np.linalg.norm(grad)}")
    np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-6 * np.abs(grad).max())


def test_hvp_matches_finite_differences_of_the_gradient():
    data = make_data(n=50, seed=7)
    loss = tight_loss(data)
    theta = data.w0.ravel()
    rng = np.random.default_rng(7)
    for _ in range(2):
        v = rng.normal(size=theta.size)
        loss.gradient(theta)
        hv = loss.hvp(theta, v)
        h = 1e-5
        fd = (loss.gradient(theta + h * v)[1] - loss.gradient(theta - h * v)[1]) / (2 * h)
        print(f"seed 7: max |Hv − fd| = {np.abs(hv - fd).max()}, |Hv| = {np.linalg.norm(hv)}")
        np.testing.assert_allclose(hv, fd, rtol=1e-5, atol=1e-5 * np.abs(hv).max())
    # the product at a θ without a cached solve solves there first
    loss.gradient(theta + 0.1)
    loss.gradient(theta + 0.2)
    np.testing.assert_allclose(loss.hvp(theta, v), hv, rtol=1e-8, atol=1e-8 * np.abs(hv).max())


def test_hybrid_lowers_the_loss_and_reports_lambda_min():
    data = make_data(n=60, seed=2)
    w0 = 0.1 * np.random.RandomState(0).normal(size=data.w_star.shape)  # near W = 0: λ_min < 0
    loss = ShuffledRegressionLoss(data.x, data.y, 0.5, tol=1e-6, iters=5000)
    trace = run_hybrid(loss, w0, data.w_star, lr=0.1, adam_iters=200, check_every=5, tol=1e-4, warm_trials=True)
    lambdas = [s["lambda_min"] for s in trace["lambda_trace"]]
    print("λ_min trace", lambdas, "switch", trace["switch_iteration"], "status", trace["status"])
    assert trace["status"] == "converged"
    assert lambdas[0] < 0 and trace["lambda_trace"][0]["certified_negative"]
    assert trace["switch_iteration"] > 0 and lambdas[-1] > 0
    assert trace["value"][-1] < 0.1 * trace["value"][0]
    assert trace["gradient_norm"][-1] <= 1e-4
    assert len(trace["time"]) == len(trace["value"]) == len(trace["w_error"]) and trace["hvp_count"] > 0
    assert trace["trial_values"] > 0  # the trust region's trial points, by loss.value
    assert all(b >= a for a, b in zip(trace["time"], trace["time"][1:]))
    c = compare(trace, trace, rtol=1e-3, gradient_target=1e-4)
    assert c["hybrid"]["seconds_to_loss"] is not None and c["speedup_to_loss"] == pytest.approx(1.0)


def test_compare_reports_the_loss_both_runs_reached():
    """The hybrid ends lower than Adam (which stops at its gradient tolerance): Adam never reaches the
    hybrid's target, and `common` times both to Adam's best loss·(1 + rtol) instead."""
    hybrid = dict(time=[1.0, 2.0, 3.0, 4.0], value=[5.0, 1.0, 0.30, 0.20], gradient_norm=[9, 3, 1, 1e-4],
                  wall_seconds=4.0)
    adam = dict(time=[1.0, 3.0, 6.0, 8.0], value=[5.0, 2.0, 0.35, 0.30], gradient_norm=[9, 4, 1, 1e-4],
                wall_seconds=8.0)
    c = compare(hybrid, adam, rtol=0.01, gradient_target=1e-3)
    assert c["loss_target"] == pytest.approx(0.202) and c["adam"]["seconds_to_loss"] is None
    assert c["speedup_to_loss"] is None
    assert c["common"]["loss_target"] == pytest.approx(0.303)
    assert (c["common"]["hybrid_seconds"], c["common"]["adam_seconds"]) == (3.0, 8.0)
    assert c["common"]["speedup"] == pytest.approx(8.0 / 3.0)


def test_trial_value_is_the_gradients_value_from_a_warm_or_a_cold_start():
    """loss.value (a trust-region trial point) solves warm from the last solve however far θ moved,
    falling back to a cold solve when that does not converge in refine_iters: either way it is
    L(θ) as a gradient evaluation there computes it."""
    data = make_data(n=60, seed=2)
    w0, w1 = data.w_star + 0.05, data.w_star + 0.3  # w0 → w1 moves points by up to 4.0, beyond √ε = 0.71
    for refine_iters in (5000, 1):  # 1: the warm start cannot converge, the cold one runs
        loss = ShuffledRegressionLoss(data.x, data.y, 0.5, tol=1e-6, iters=20000, refine_iters=refine_iters)
        loss.gradient(w0.ravel())
        trial = loss.value(w1.ravel())
        fresh = ShuffledRegressionLoss(data.x, data.y, 0.5, tol=1e-6, iters=20000, warm_start=False)
        assert trial == pytest.approx(fresh.gradient(w1.ravel())[0], rel=1e-5)
        (record,) = [e for e in loss.record if e.kind == "value"]
        assert record.converged and record.iterations > (refine_iters == 1)


def test_an_unconverged_hessian_product_warns_once():
    data = make_data(n=60, seed=2)
    loss = ShuffledRegressionLoss(data.x, data.y, 0.5, tol=1e-8, iters=20000, hvp_tol=1e-12, hvp_iters=1)
    theta = data.w_star.ravel()
    loss.gradient(theta)
    with pytest.warns(RuntimeWarning, match="stopped short"):
        loss.hvp(theta, np.ones_like(theta))
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loss.hvp(theta, np.ones_like(theta))  # the second failure is only recorded
    assert [e.converged for e in loss.record if e.kind == "hvp"] == [False, False]


def test_budget_stops_a_run_inside_a_step_and_its_state_resumes_it():
    """BudgetExhausted is a fs.StopOptimization: the 5th evaluation is refused, Adam ends at its 3rd
    step with status 'stopped' and its moments, and continued from them ends where a run without a
    budget ends."""
    import flashsinkhorn as fs
    data = make_data(n=30, seed=2)
    settings = dict(tol=1e-9, iters=20000, warm_start=False)
    whole = fs.adam(ShuffledRegressionLoss(data.x, data.y, 0.5, **settings).gradient, data.w0.ravel(), lr=0.05, iters=8)
    loss = ShuffledRegressionLoss(data.x, data.y, 0.5, budget_evaluations=4, **settings)
    stopped = fs.adam(loss.gradient, data.w0.ravel(), lr=0.05, iters=8)
    assert stopped.status == "stopped" and stopped.iterations == 3 and loss.count("gradient") == 4
    rest = fs.adam(ShuffledRegressionLoss(data.x, data.y, 0.5, **settings).gradient, stopped.theta, lr=0.05, iters=8,
                   state=stopped.state)
    np.testing.assert_allclose(rest.theta, whole.theta, atol=1e-10)


def test_a_solve_is_cut_at_the_wall_time_budget():
    """The solve is capped at the iterations that fit in what is left of budget_seconds at the last
    solve's speed; one the cap stops short of tol raises BudgetExhausted instead of returning."""
    data = make_data(n=30, seed=2)
    loss = ShuffledRegressionLoss(data.x, data.y, 0.05, tol=1e-12, iters=20000, warm_start=False)
    loss.gradient(data.w0.ravel())  # measures the speed
    assert loss._iterations_in_budget(500) == 500  # no budget: no cap
    # ~100 iterations' worth at a pretended 10 ms each: a second of slack for a loaded machine (at the
    # real speed, a few µs an iteration, the entry check itself could already find the budget spent)
    loss._seconds_per_iteration = 0.01
    loss.budget_seconds = loss.elapsed() + 1.0
    assert 0 < loss._iterations_in_budget(20000) <= 100
    with pytest.raises(BudgetExhausted, match="inside a solve"):
        loss.gradient(data.w_star.ravel())  # ε = 0.05 to 1e-12 takes thousands of iterations
    assert loss.count("gradient") == 1


def test_driver_writes_json_and_plots(tmp_path):
    spec = importlib.util.spec_from_file_location("shuffled_regression_run", EXAMPLE / "run.py")
    run = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(run)
    written = run.main(["--n", "40", "--out-dir", str(tmp_path), "--eps", "0.5", "--init-scale", "0",
                        "--lr", "0.1", "--check-every", "5", "--hybrid-adam-iters", "50", "--adam-iters", "30",
                        "--tol", "1e-4", "--sinkhorn-tol", "1e-6", "--sinkhorn-iters", "5000", "--quiet"])
    report = json.loads((tmp_path / "shuffled_regression_n40.json").read_text())
    assert report["config"]["n"] == 40 and report["config"]["eps"] == 0.5
    for name in ("hybrid", "adam"):
        trace = report[name]
        assert trace["value"] and len(trace["value"]) == len(trace["time"]) == len(trace["w_error"])
        assert trace["peak_memory"]["device"] == "cpu"
    assert report["hybrid"]["lambda_trace"] and report["hybrid"]["switch_iteration"] > 0
    assert report["final_lambda"]["hybrid"]["lambda_min"] > 0
    assert report["comparison"]["hybrid"]["seconds_to_loss"] is not None
    if importlib.util.find_spec("matplotlib") is not None:
        for stem in ("loss_vs_time", "w_error", "lambda_min"):
            png = tmp_path / f"{stem}_n40.png"
            assert png in written and png.stat().st_size > 1000


def test_forcing_term_loosens_far_solves_and_tightens_near_the_solution():
    data = make_data(n=64, seed=2)
    w0 = 0.1 * np.random.RandomState(0).normal(size=data.w_star.shape)
    forced = ShuffledRegressionLoss(data.x, data.y, 0.5, tol=1e-7, iters=20000, forcing=1e-4, tol_max=1e-3,
                                    warm_start=False)
    exact = ShuffledRegressionLoss(data.x, data.y, 0.5, tol=1e-7, iters=20000, warm_start=False)
    assert forced.solve_tolerance() == 1e-3  # no gradient yet: the loosest
    v_far, g_far = forced.gradient(w0.ravel())
    v_ref, g_ref = exact.gradient(w0.ravel())
    assert forced.record[-1].solve_tol == 1e-3 and exact.record[-1].solve_tol == 1e-7
    assert forced.record[-1].iterations < exact.record[-1].iterations
    # the loose gradient still points the right way, within a few percent
    assert np.linalg.norm(g_far - g_ref) <= 0.05 * np.linalg.norm(g_ref)
    assert forced.solve_tolerance() == pytest.approx(min(1e-3, 1e-4 * np.linalg.norm(g_far)))
    _, g_star = forced.gradient(data.w_star.ravel())  # a smaller gradient tightens the next solve ...
    tightened = forced.solve_tolerance()
    assert tightened == pytest.approx(max(1e-7, min(1e-3, 1e-4 * np.linalg.norm(g_star))))
    assert tightened < min(1e-3, 1e-4 * np.linalg.norm(g_far))
    forced.gradient(w0.ravel())  # ... and a larger one does not loosen it again
    assert forced.solve_tolerance() == tightened
    forced._smallest_gradient_norm = 1e-6  # clipped at tol
    assert forced.solve_tolerance() == 1e-7
    forced.reset()
    assert forced.solve_tolerance() == 1e-3
    # an explicit tolerance wins (L(W*) and λ_min are evaluated strictly)
    forced.gradient(data.w_star.ravel(), tol=1e-7)
    assert forced.record[-1].solve_tol == 1e-7


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"shuffled_regression_{name}", EXAMPLE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_single_runs_join_by_merge(tmp_path):
    run, merge = _load("run"), _load("merge")
    common = ["--n", "36", "--eps", "0.5", "--init-scale", "0", "--lr", "0.1", "--check-every", "5",
              "--hybrid-adam-iters", "40", "--adam-iters", "25", "--tol", "1e-4", "--sinkhorn-tol", "1e-6",
              "--forcing", "1e-4", "--quiet", "--no-plots"]
    run.main(common + ["--runs", "hybrid", "--out-dir", str(tmp_path / "h")])
    run.main(common + ["--runs", "adam", "--out-dir", str(tmp_path / "a"), "--budget-seconds", "60"])
    only_hybrid = json.loads((tmp_path / "h" / "shuffled_regression_n36.json").read_text())
    assert only_hybrid["complete"] and "adam" not in only_hybrid and "comparison" not in only_hybrid
    assert only_hybrid["hybrid"]["solve_tol"][0] == 1e-3  # the forcing term's first solve
    out = merge.main([str(tmp_path / "h" / "shuffled_regression_n36.json"),
                      str(tmp_path / "a" / "shuffled_regression_n36.json"), "--out-dir", str(tmp_path / "m"),
                      "--no-plots"])
    joined = json.loads(out.read_text())
    assert joined["config"]["budget_seconds"] == {"hybrid": None, "adam": 60.0}
    assert joined["comparison"]["hybrid"]["seconds_to_loss"] is not None
    assert joined["adam"]["value"] == json.loads((tmp_path / "a" / "shuffled_regression_n36.json").read_text())["adam"]["value"]
    # a setting only the hybrid reads may differ (an Adam run made with another --check-every joins)
    run.main([a if a != "5" else "7" for a in common] + ["--runs", "adam", "--out-dir", str(tmp_path / "c")])
    again = merge.main([str(tmp_path / "h" / "shuffled_regression_n36.json"),
                        str(tmp_path / "c" / "shuffled_regression_n36.json"), "--out-dir", str(tmp_path / "n"),
                        "--no-plots"])
    assert json.loads(again.read_text())["config"]["check_every"] == 5  # the hybrid's
    # runs of different problems are refused, naming the difference
    run.main(common[:2] + ["--eps", "0.6"] + common[4:] + ["--runs", "adam", "--out-dir", str(tmp_path / "b")])
    with pytest.raises(SystemExit, match="eps"):
        merge.main([str(tmp_path / "h" / "shuffled_regression_n36.json"),
                    str(tmp_path / "b" / "shuffled_regression_n36.json"), "--out-dir", str(tmp_path / "x"), "--no-plots"])
    with pytest.raises(SystemExit, match="no Adam run"):
        merge.main([str(tmp_path / "h" / "shuffled_regression_n36.json")] * 2 + ["--out-dir", str(tmp_path / "x")])


def test_a_run_cut_by_its_cap_resumes_in_another_call(tmp_path):
    """run.py --resume: segments of one run joined into one trace, ending where the uninterrupted run ends."""
    run = _load("run")
    common = ["--n", "36", "--eps", "0.5", "--init-scale", "0", "--lr", "0.1", "--check-every", "5", "--tol", "1e-4",
              "--sinkhorn-tol", "1e-9", "--quiet", "--no-plots"]
    whole_args = common + ["--adam-iters", "20", "--hybrid-adam-iters", "40"]
    run.main(whole_args + ["--out-dir", str(tmp_path / "whole")])
    run.main(common + ["--adam-iters", "8", "--hybrid-adam-iters", "7", "--out-dir", str(tmp_path / "first")])
    first = json.loads((tmp_path / "first" / "shuffled_regression_n36.json").read_text())
    assert first["adam"]["status"] == "max_iterations" and first["adam"]["state"]["steps"] == 8
    assert first["hybrid"]["status"] == "max_iterations" and first["hybrid"]["state"]["checks"] == 2
    run.main(whole_args + ["--resume", str(tmp_path / "first"), "--out-dir", str(tmp_path / "second")])
    whole = json.loads((tmp_path / "whole" / "shuffled_regression_n36.json").read_text())
    joined = json.loads((tmp_path / "second" / "shuffled_regression_n36.json").read_text())

    adam, reference = joined["adam"], whole["adam"]
    assert adam["segments"] == 2 and adam["iterations"] == 20 == reference["iterations"]
    assert len(adam["value"]) == len(reference["value"]) + 1  # the second segment re-evaluates its start
    assert all(b > a for a, b in zip(adam["time"], adam["time"][1:]))  # one clock over both segments
    assert adam["wall_seconds"] == pytest.approx(sum(adam["segment_wall_seconds"]))
    np.testing.assert_allclose(adam["final_theta"], reference["final_theta"], atol=1e-6)

    hybrid, reference = joined["hybrid"], whole["hybrid"]
    assert hybrid["segments"] == 2
    checks = [s["iteration"] for s in hybrid["lambda_trace"]]
    assert checks == [s["iteration"] for s in reference["lambda_trace"]] and checks[:3] == [0, 5, 10]
    assert hybrid["switch_iteration"] == reference["switch_iteration"]
    assert hybrid["status"] == reference["status"]
    np.testing.assert_allclose(hybrid["final_theta"], reference["final_theta"], atol=1e-6)
    assert "comparison" in joined and joined["resumed_from"] == str(tmp_path / "first")

    # the continuation's first solve starts warm from the potentials the first segment saved ...
    assert first["adam"]["potentials_saved"] and (tmp_path / "first" / "potentials_adam_n36.npz").exists()
    warm = adam["sinkhorn_iterations"][9]  # the second segment's re-evaluation of Adam's step 8
    for saved in (tmp_path / "first").glob("potentials_*.npz"):
        saved.unlink()
    run.main(whole_args + ["--resume", str(tmp_path / "first"), "--runs", "adam", "--out-dir", str(tmp_path / "cold")])
    cold = json.loads((tmp_path / "cold" / "shuffled_regression_n36.json").read_text())["adam"]
    assert warm * 5 <= cold["sinkhorn_iterations"][9]  # ... where without them it is cold
    np.testing.assert_allclose(cold["final_theta"], whole["adam"]["final_theta"], atol=1e-6)

    # a finished run is carried over; another problem is refused, naming the setting
    run.main(whole_args + ["--resume", str(tmp_path / "whole"), "--runs", "adam", "--out-dir", str(tmp_path / "again")])
    carried = json.loads((tmp_path / "again" / "shuffled_regression_n36.json").read_text())
    if whole["adam"]["status"] == "converged":
        assert carried["adam"] == whole["adam"]
    else:  # at its cap: the continuation evaluates its start and makes no step
        assert carried["adam"]["iterations"] == 20 and len(carried["adam"]["value"]) == len(whole["adam"]["value"]) + 1
    with pytest.raises(SystemExit, match="eps"):
        run.main([a if a != "0.5" else "0.6" for a in whole_args] + ["--resume", str(tmp_path / "first"),
                                                                    "--out-dir", str(tmp_path / "x")])


def test_cuda_hvp_at_the_regressions_cost_scale_is_right_or_says_it_failed():
    """At W* (n = 1000: cost scale 1580, ε = 0.05) the fp32 CG converges on CUDA since its plan passes
    apply one matrix in both orientations (a8a8538, docs/cuda_backend.md; measured with these settings
    by bench/studies/hvp_stage_errors.py: 178 iterations, 4.4e-4 from float64). With 3×TF32 dots
    (FLASHSINKHORN_FP32_DOTS=3xtf32) it does not, and must then say so: whatever an HVP returns with
    converged = True must match the fp64 product."""
    import os

    import flashsinkhorn as fs

    if not torch.cuda.is_available() or not fs.cuda_available():
        pytest.skip("no CUDA device")
    d = make_data(n=1000)
    z = d.x @ d.w_star
    direction = d.x @ np.random.default_rng(0).standard_normal(d.w_star.shape)
    products = {}
    for precision, dtype in (("fp64", torch.float64), ("fp32", torch.float32)):
        t = lambda a: torch.as_tensor(a, dtype=dtype, device="cuda").contiguous()  # noqa: E731
        solver = fs.Solver(t(z), t(d.y), eps=0.05, tol=3e-5, iters=20000, precision=precision, relaxation=1.8,
                           scaling=0.5, device="cuda")
        assert solver.solve().converged
        products[precision] = solver.hvp(t(direction), tol=1e-6, iters=500, preconditioner="diagonal")
    assert products["fp64"].converged
    if os.environ.get("FLASHSINKHORN_FP32_DOTS", "fma") in ("", "fma"):
        assert products["fp32"].converged
    exact = products["fp64"].product.double().cpu()
    if products["fp32"].converged:
        got = products["fp32"].product.double().cpu()
        assert float((got - exact).norm() / exact.norm()) < 1e-2


def test_hessian_check_reports_the_spectrum_at_w_star(capsys):
    """hessian_check.py (the fp32 CUDA HVP's check at scale, tools/gpu_check.sh's examples stage) on
    the CPU at n = 300: at W* H_W is positive definite, every HVP's CG converges, and --lanczos-steps
    bounds the products (3 here, d_x·d_y = 10 by default, the exact spectrum)."""
    spec = importlib.util.spec_from_file_location("hessian_check", EXAMPLE / "hessian_check.py")
    hessian_check = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hessian_check)
    full, = hessian_check.main(["--n", "300", "--devices", "cpu", "--precisions", "fp64"])
    assert full["lanczos_steps"] == 10 and len(full["hvp_cg_iterations"]) == 10
    assert all(full["hvp_converged"])
    assert 0 < full["lambda_min"] < full["lambda_max"]
    short, = hessian_check.main(["--n", "300", "--devices", "cpu", "--precisions", "fp64", "--lanczos-steps", "3"])
    assert short["lanczos_steps"] == 3 and len(short["hvp_cg_iterations"]) == 3
    # Three Lanczos steps see a part of the spectrum: Ritz values inside the full one (to the
    # products' CG tolerance, 1e-6 relative).
    slack = 1e-4 * full["lambda_max"]
    assert full["lambda_min"] - slack <= short["lambda_min"] <= short["lambda_max"] <= full["lambda_max"] + slack
    assert json.loads(capsys.readouterr().out.splitlines()[-1])["lanczos_steps"] == 3


def test_device_segment_settings_continue_the_newest_n100000_segment():
    """device_segment.sh's default settings (ω = 'auto' since session 23) are not those of the session-22
    n = 10⁵ segment (ω = 1.8): run.py --resume refuses to join them, and joins when ω matches; a hybrid
    continuation may not change the hybrid's settings (the ungated session-24 hybrid); they are those of
    the session-26 Adam segment (--sinkhorn-tol 2e-4), whose potentials they load and which Adam alone
    continues; the gated hybrid may not, for that run passed the gate (step 742) without a check."""
    import shlex

    run = _load("run")
    script = (EXAMPLE / "device_segment.sh").read_text()
    defaults = script.split('REGRESSION_ARGS:-', 1)[1].split('}"', 1)[0].replace("\\\n", " ")
    segment = EXAMPLE / "results" / "h200_n100000_adam_s22_segment1"
    args = run.parse(shlex.split(defaults) + ["--n", "100000", "--runs", "adam", "--budget-seconds", "100",
                                              "--resume", str(segment), "--out-dir", "unused"])
    data, w0 = run.problem(100000, args)
    earlier = json.loads((segment / "shuffled_regression_n100000.json").read_text())
    device = {"device_name": earlier["config"]["device_name"]}  # an H200 then, this machine now
    with pytest.raises(SystemExit, match="relaxation"):
        run.previous_report(args, 100000, run.config_of(100000, args, data, w0) | device)
    args.relaxation, args.sinkhorn_tol = 1.8, 3e-5  # and --sinkhorn-tol was 3e-5 until session 26
    config = run.config_of(100000, args, data, w0) | device
    assert run.previous_report(args, 100000, config)["adam"]["status"] == "time_limit"
    assert config["check_every"] != earlier["config"]["check_every"]  # Adam alone ignores the hybrid's settings
    ungated = EXAMPLE / "results" / "h200_n100000_hybrid_s24_ungated"  # a hybrid's continuation may not change them
    args.relaxation, args.runs, args.resume = "auto", ["hybrid"], ungated
    with pytest.raises(SystemExit, match="check_gradient_norm"):
        run.previous_report(args, 100000, run.config_of(100000, args, data, w0) | device)
    args.runs, args.eps = ["adam"], 0.06  # and a changed problem is refused
    with pytest.raises(SystemExit, match="eps"):
        run.previous_report(args, 100000, run.config_of(100000, args, data, w0) | device)

    current = EXAMPLE / "results" / "h200_n100000_adam_s26_tol2e-4_segment1"  # with its potentials
    args = run.parse(shlex.split(defaults) + ["--n", "100000", "--runs", "adam", "--budget-seconds", "100",
                                              "--resume", str(current), "--out-dir", "unused"])
    earlier = run.previous_report(args, 100000, run.config_of(100000, args, data, w0) | device)
    assert earlier["adam"]["status"] == "time_limit" and earlier["adam"]["state"]["steps"] == 1047
    potentials = run.load_potentials(args, 100000, "adam")
    np.testing.assert_allclose(potentials["z"], data.x @ np.reshape(earlier["adam"]["final_theta"], (5, 2)), atol=1e-3)
    assert np.isfinite(potentials["f"]).all() and np.isfinite(potentials["g"]).all()
    # the hybrid of these settings checks at W0 (--check-at-start), which Adam alone did not: refused;
    # without it, the gate (--check-gradient-norm 0.1) would have checked at Adam's step 742: refused too
    args.runs = ["hybrid"]
    earlier = run.previous_report(args, 100000, run.config_of(100000, args, data, w0) | device)
    with pytest.raises(SystemExit, match="check-at-start"):
        run.hybrid_resume(earlier, args)
    args.check_at_start = False
    with pytest.raises(SystemExit, match="step 742"):
        run.hybrid_resume(earlier, args)


def test_driver_takes_the_dense_model(tmp_path):
    """run.py --dense-model-dimension 10 (d_x·d_y = 10): the hybrid's check at W0 certified negative by
    1–2 products, a later negative one either so or exactly (10 products), the switch check exact (10 products, residual 0), whose Hessian the trust region's first
    step reuses; a hybrid-only
    setting, so merge.py joins it with an Adam run made without it."""
    run = _load("run")
    common = ["--n", "36", "--eps", "0.5", "--init-scale", "0", "--lr", "0.1", "--check-every", "5",
              "--hybrid-adam-iters", "200", "--adam-iters", "10", "--tol", "1e-4", "--quiet", "--no-plots"]
    run.main(common + ["--runs", "hybrid", "--dense-model-dimension", "10", "--out-dir", str(tmp_path / "h")])
    report = json.loads((tmp_path / "h" / "shuffled_regression_n36.json").read_text())
    hybrid = report["hybrid"]
    assert report["config"]["dense_model_dimension"] == 10
    trace = hybrid["lambda_trace"]
    assert trace[0]["certified_negative"] and trace[0]["lanczos_steps"] <= 2  # clearly negative at W0: cheap
    assert all(s["certified_negative"] and s["lanczos_steps"] in (1, 2, 10) for s in trace[:-1])
    assert trace[-1]["residual"] == 0 and trace[-1]["lanczos_steps"] == 10  # the exact switch check
    assert hybrid["lambda_trace"][0]["lambda_min"] < 0 < hybrid["lambda_trace"][-1]["lambda_min"]  # the escape
    assert hybrid["switch_iteration"] == hybrid["lambda_trace"][-1]["iteration"] and hybrid["status"] == "converged"
    assert hybrid["second_order_history"][0][3] == 0  # no product: the switch check's Hessian
    run.main(common + ["--runs", "adam", "--out-dir", str(tmp_path / "a")])
    merge = _load("merge")
    joined = merge.merge(report, json.loads((tmp_path / "a" / "shuffled_regression_n36.json").read_text()))
    assert joined["config"]["dense_model_dimension"] == 10


def test_driver_checks_at_start_under_a_gate(tmp_path):
    """run.py --check-gradient-norm G --check-at-start: a check at W0 (λ_min < 0 there) although
    ‖∇L(W0)‖ > G, the next ones inside the gate; such a hybrid does not continue an Adam-alone run."""
    run = _load("run")
    resume = _load("regression_resume")
    run.main(["--n", "36", "--eps", "0.5", "--init-scale", "0", "--lr", "0.1", "--check-every", "5",
              "--check-gradient-norm", "0.5", "--check-at-start", "--hybrid-adam-iters", "200", "--tol", "1e-4",
              "--runs", "hybrid", "--quiet", "--no-plots", "--out-dir", str(tmp_path)])
    report = json.loads((tmp_path / "shuffled_regression_n36.json").read_text())
    hybrid = report["hybrid"]
    first = hybrid["lambda_trace"][0]
    assert report["config"]["check_at_start"] and first["iteration"] == 0 and first["lambda_min"] < 0
    assert hybrid["gradient_norm"][0] > 0.5  # outside the gate
    assert all(hybrid["gradient_norm"][s["iteration"]] <= 0.5 for s in hybrid["lambda_trace"][1:])
    with pytest.raises(ValueError, match="check-at-start"):
        resume.hybrid_after_adam({"gradient_norm": [2.0, 1.0]}, 0.5, check_at_start=True)


def test_driver_takes_auto_relaxation(tmp_path):
    """run.py --relaxation auto: the library's adaptive over-relaxation for every solve, recorded."""
    run = _load("run")
    run.main(["--n", "36", "--eps", "0.5", "--init-scale", "0", "--lr", "0.1", "--check-every", "5",
              "--hybrid-adam-iters", "10", "--adam-iters", "10", "--tol", "1e-4", "--relaxation", "auto",
              "--quiet", "--no-plots", "--out-dir", str(tmp_path)])
    report = json.loads((tmp_path / "shuffled_regression_n36.json").read_text())
    assert report["config"]["relaxation"] == "auto" and report["complete"]
    assert report["adam"]["iterations"] == 10 and min(report["adam"]["value"]) < report["adam"]["value"][0]


def test_plateau_probe_solves_at_a_segments_end_point(tmp_path):
    """plateau_probe.py on 200 rows of the committed n = 10⁵ segment's problem (CPU, float64): every
    solve converges, and warm and cold solves at the same perturbed point agree on the value."""
    probe = _load("plateau_probe")
    rows = probe.main([str(EXAMPLE / "results" / "h200_n100000_adam_s22_segment1"), "--rows", "200", "--device", "cpu",
                       "--tol", "1e-3", "--shifts", "0.5", "--out", str(tmp_path / "probe.jsonl")])
    assert [r["warm"] for r in rows] == [False, True, False, False] and all(r["converged"] for r in rows)
    assert rows[1]["value"] == pytest.approx(rows[2]["value"], rel=1e-3)
    assert rows[3]["omega"] == 1.8 and rows[3]["value"] == pytest.approx(rows[0]["value"], rel=1e-3)
    assert len((tmp_path / "probe.jsonl").read_text().splitlines()) == 4


def test_driver_reports_inside_the_solves_when_asked(tmp_path, capsys):
    """--solve-progress: a line per convergence check of every Sinkhorn solve (fs.sinkhorn's
    progress=True) beside the per-evaluation lines; a per-call setting, left out of what merge and
    --resume compare."""
    from regression_config import PER_CALL
    run = _load("run")
    run.main(["--n", "30", "--eps", "0.5", "--init-scale", "0", "--lr", "0.1", "--adam-iters", "3", "--runs", "adam",
              "--tol", "1e-9", "--solve-progress", "--no-plots", "--out-dir", str(tmp_path)])
    err = capsys.readouterr().err
    assert "solve_progress" in PER_CALL
    assert err.count("(done)") >= 4 and "grad #" in err  # L(W*) and three Adam gradients at least
    report = json.loads((tmp_path / "shuffled_regression_n30.json").read_text())
    assert report["config"]["solve_progress"] is True


def test_scale_probe_continues_one_solve_in_chunks(tmp_path):
    """scale_probe.py at n = 300 (CPU, float64): the cold schedule, then warm chunks that continue it —
    the error falls chunk by chunk and the probe stops at the first chunk that reaches --tol."""
    probe = _load("scale_probe")
    rows = probe.main(["--n", "300", "--device", "cpu", "--eps", "0.5", "--tol", "1e-7", "--chunks", "3", "3", "5000", "5000",
                       "--out", str(tmp_path / "probe.jsonl")])
    assert [r["start"] for r in rows] == ["cold", "warm", "warm", "warm"] and rows[0]["iterations"] > 3
    assert rows[1]["iterations"] == rows[2]["iterations"] == 3 and not rows[2]["converged"]
    errors = [r["marginal_error"] for r in rows]
    assert errors[0] > errors[1] > errors[2] > 1e-7 >= errors[3] and rows[3]["converged"]
    assert len((tmp_path / "probe.jsonl").read_text().splitlines()) == 4


def test_a_continuation_cut_in_its_first_solve_stays_resumable(tmp_path):
    """A segment whose first evaluation the budget cuts (at n = 10⁵ a first solve outlasted a whole
    device call) has made no step: it is 'stopped' where it began, the earlier θ and state kept and
    the potentials it restored passed on, so the next --resume goes on from the same place."""
    from regression_resume import resumable, start_of
    run = _load("run")
    common = ["--n", "36", "--eps", "0.5", "--init-scale", "0", "--lr", "0.1", "--check-every", "5", "--tol", "1e-4",
              "--sinkhorn-tol", "1e-9", "--quiet", "--no-plots"]
    run.main(common + ["--adam-iters", "8", "--hybrid-adam-iters", "7", "--out-dir", str(tmp_path)])
    first = json.loads((tmp_path / "shuffled_regression_n36.json").read_text())
    data = make_data(n=36, seed=2)
    for name, method in (("adam", run_adam), ("hybrid", run_hybrid)):
        with np.load(tmp_path / f"potentials_{name}_n36.npz") as saved:
            potentials = {k: saved[k] for k in ("z", "f", "g")}
        loss = ShuffledRegressionLoss(data.x, data.y, 0.5, tol=1e-9, budget_evaluations=0)  # refuses the first
        options = dict(lr=0.1, tol=1e-4) | (dict(iters=20) if name == "adam" else dict(adam_iters=40, check_every=5))
        cut = method(loss, data.w0, data.w_star, resume=first[name], potentials=potentials, **options)
        assert cut["status"] == "stopped" and "budget spent" in cut["message"] and resumable(cut)
        assert cut["segments"] == 2 and len(cut["value"]) == len(first[name]["value"])  # no evaluation added
        theta, state, smallest = start_of(cut)
        np.testing.assert_array_equal(theta, first[name]["final_theta"])
        assert state == first[name]["state"] and smallest == min(first[name]["gradient_norm"])
        again = loss.potentials_at(theta)
        assert again is not None and all(np.array_equal(again[k], potentials[k]) for k in ("z", "f", "g"))
    fresh = run_adam(ShuffledRegressionLoss(data.x, data.y, 0.5, tol=1e-9, budget_evaluations=0), data.w0,
                     data.w_star, lr=0.1, iters=20, tol=1e-4)
    assert fresh["status"] == "budget_exhausted" and "state" not in fresh  # nothing to go on from


def test_a_gated_hybrid_continues_an_adam_run_that_never_met_its_gate(tmp_path):
    """--check-gradient-norm G: no λ_min check before the first step with ‖∇L‖ ≤ G, so an Adam-alone run
    none of whose steps met G is the gated hybrid's first segment (run.py --resume --runs hybrid on it):
    the continuation makes the uninterrupted gated hybrid's checks, switch and end point."""
    run = _load("run")
    common = ["--n", "36", "--eps", "0.5", "--init-scale", "0", "--lr", "0.1", "--check-every", "5", "--tol", "1e-4",
              "--sinkhorn-tol", "1e-9", "--hybrid-adam-iters", "80", "--quiet", "--no-plots"]
    cut = 20
    run.main(common + ["--runs", "adam", "--adam-iters", str(cut), "--out-dir", str(tmp_path / "adam")])
    adam = json.loads((tmp_path / "adam" / "shuffled_regression_n36.json").read_text())["adam"]
    gate = 0.99 * min(adam["gradient_norm"][:cut])  # met by none of Adam's first `cut` steps
    gated = common + ["--check-gradient-norm", str(gate), "--runs", "hybrid"]
    run.main(gated + ["--out-dir", str(tmp_path / "whole")])
    run.main(gated + ["--resume", str(tmp_path / "adam"), "--out-dir", str(tmp_path / "continued")])
    whole = json.loads((tmp_path / "whole" / "shuffled_regression_n36.json").read_text())["hybrid"]
    continued = json.loads((tmp_path / "continued" / "shuffled_regression_n36.json").read_text())["hybrid"]

    checks = [s["iteration"] for s in whole["lambda_trace"]]
    assert checks and checks[0] >= cut  # the gate kept every check off Adam's first steps
    assert whole["gradient_norm"][checks[0]] <= gate < min(whole["gradient_norm"][:checks[0]])
    np.testing.assert_allclose(whole["value"][:cut + 1], adam["value"], rtol=1e-9)  # Adam alone until then
    assert continued["first_segment_from_adam"] and continued["segments"] == 2
    assert [s["iteration"] for s in continued["lambda_trace"]] == checks
    assert continued["switch_iteration"] == whole["switch_iteration"] >= checks[0]
    assert continued["status"] == whole["status"]
    np.testing.assert_allclose(continued["final_theta"], whole["final_theta"], atol=1e-6)

    with pytest.raises(SystemExit, match="≤ the gate"):  # a gate Adam's run met: not the hybrid's segment
        run.main(common + ["--check-gradient-norm", str(max(adam["gradient_norm"])), "--runs", "hybrid",
                           "--resume", str(tmp_path / "adam"), "--out-dir", str(tmp_path / "x")])
    with pytest.raises(SystemExit, match="gradient gate"):  # ungated, the hybrid checked at step 0
        run.main(common + ["--runs", "hybrid", "--resume", str(tmp_path / "adam"), "--out-dir", str(tmp_path / "y")])
