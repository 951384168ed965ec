"""The CLI contract other tools script against (issue 2, item 3 and item 7)."""

import json
import os
import stat

import numpy as np
import pytest

from conftest import device, mean_cost, random_problem, rel_err, run_cli

REQUIRED = {
    "cost": float, "primal_cost": float, "relative_entropy": float, "iterations": int, "marginal_error": float,
    "converged": bool, "n": int, "m": int, "d": int, "eps": float, "device": str, "seconds": float,
}


def test_json_keys_and_types(run_solve):
    seed = 5001
    x, y, a, b = random_problem(seed, 37, 41, 3)
    out = run_solve(x, y, a, b, eps=0.5, iters=5, tol=0, context=f"seed={seed}")
    for key, typ in REQUIRED.items():
        assert key in out.summary, f"seed={seed}: key {key!r} missing from {sorted(out.summary)}"
        value = out.summary[key]
        if typ is float:
            assert isinstance(value, (int, float)) and not isinstance(value, bool), f"{key}: {value!r}"
        else:
            assert isinstance(value, typ), f"{key}: {value!r} is not {typ.__name__}"
    assert (out["n"], out["m"], out["d"]) == (37, 41, 3)
    assert out["eps"] == 0.5
    assert out["seconds"] >= 0
    if device() == "cpu":
        assert out["device"] == "cpu", out["device"]


def test_the_summary_reports_the_programs_own_peak_memory(run_solve):
    """peak_host_rss_bytes is the CLI's own VmHWM (Linux; null elsewhere): bytes, at least the points it
    read, and far below what its Python parent holds (ru_maxrss of a forked child would report that)."""
    x, y, a, b = random_problem(5003, 2000, 2000, 64)
    out = run_solve(x, y, a, b, eps=0.5, iters=3, tol=0)
    peak = out["peak_host_rss_bytes"]
    if not os.path.exists("/proc/self/status"):
        assert peak is None
        return
    assert isinstance(peak, int) and not isinstance(peak, bool), peak
    assert peak > x.nbytes + y.nbytes, peak
    if device() == "cpu":  # (a CUDA context alone holds hundreds of MB of host memory)
        assert peak < 512 << 20, peak


def test_stdout_is_exactly_one_json_object(cli_binary, tmp_path):
    seed = 5002
    x, y, _, _ = random_problem(seed, 10, 12, 2)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", y)
    proc = run_cli(["solve", "--x", tmp_path / "x.npy", "--y", tmp_path / "y.npy", "--eps", "0.3", "--iters", "3",
                    "--tol", "0", "--device", device()])  # progress (not --quiet) must go to stderr only
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)  # raises if anything else is on stdout
    assert isinstance(summary, dict)


@pytest.mark.parametrize("iters", [1, 3, 10, 17])
def test_fixed_iteration_count(run_solve, iters):
    seed = 5003
    x, y, a, b = random_problem(seed, 20, 30, 2)
    eps = 0.01 * mean_cost(x, y, a, b, 1.0)  # small ε: nowhere near converged, so tol 0 must not stop early
    out = run_solve(x, y, a, b, eps=eps, iters=iters, tol=0, check_every=4, out=False, context=f"seed={seed}")
    assert out["iterations"] == iters, f"seed={seed}: --iters {iters} --tol 0 did {out['iterations']}"
    assert out["converged"] is False, f"seed={seed}: tol 0 reported converged"


def test_converged_flag(run_solve):
    seed = 5004
    x, y, a, b = random_problem(seed, 40, 35, 2)
    eps = 0.5 * mean_cost(x, y, a, b, 1.0)
    loose = run_solve(x, y, a, b, eps=eps, iters=1000, tol=1e-3, out=False, context=f"seed={seed}")
    assert loose["converged"] is True and loose["marginal_error"] <= 1e-3, loose.summary
    assert loose["iterations"] < 1000, loose.summary
    tight = run_solve(x, y, a, b, eps=0.001 * eps, iters=2, tol=1e-12, out=False, context=f"seed={seed}")
    assert tight["converged"] is False and tight["iterations"] == 2, tight.summary
    assert tight["marginal_error"] > 1e-12, tight.summary


@pytest.mark.parametrize("precision,dtype", [("fp64", np.float64), ("fp32", np.float32), ("tf32", np.float32),
                                             ("bf16", np.float32)])
def test_output_files(run_solve, precision, dtype):
    seed = 5005
    x, y, a, b = random_problem(seed, 33, 21, 4)
    out = run_solve(x, y, a, b, eps=1.0, iters=5, tol=0, precision=precision, context=f"seed={seed}")
    assert out.f is not None and out.g is not None and out.transport_x is not None, "f/g/transport_x.npy missing"
    assert out.f.dtype == dtype and out.g.dtype == dtype, (out.f.dtype, out.g.dtype)
    assert out.f.shape == (33,) and out.g.shape == (21,) and out.transport_x.shape == (33, 4)
    # transport_x is a convex combination of the y_j: inside their bounding box
    lo, hi = y.min(0), y.max(0)
    span = hi - lo
    assert np.all(out.transport_x >= lo - 1e-3 * span) and np.all(out.transport_x <= hi + 1e-3 * span)


def test_cost_is_dual_value_of_written_potentials(run_solve):
    """cost = ⟨a,f⟩ + ⟨b,g⟩ with normalised weights, printed with enough digits (17 significant)."""
    seed = 5006
    x, y, a, b = random_problem(seed, 50, 45, 3)
    out = run_solve(x, y, a, b, eps=0.7, iters=13, tol=0, precision="fp64", context=f"seed={seed}")
    an, bn = a / a.sum(), b / b.sum()
    want = float(an @ out.f + bn @ out.g)
    # two sums of 50 float64 terms in different orders: 1e-14 relative to Σ|terms|
    bound = 1e-14 * float(an @ np.abs(out.f) + bn @ np.abs(out.g))
    assert abs(out.cost - want) <= bound, f"seed={seed}: cost {out.cost!r} vs ⟨a,f⟩+⟨b,g⟩ {want!r}"


def test_float32_input_files(run_solve):
    """Inputs may be float32 .npy: the result equals solving the float64 upcast of the same values."""
    seed = 5007
    x, y, a, b = random_problem(seed, 30, 31, 3)
    x32, y32 = x.astype(np.float32), y.astype(np.float32)
    a32, b32 = a.astype(np.float32), b.astype(np.float32)
    r32 = run_solve(x32, y32, a32, b32, eps=0.4, iters=9, tol=0, precision="fp64", input_dtype=np.float32,
                    context=f"seed={seed}")
    r64 = run_solve(x32.astype(np.float64), y32.astype(np.float64), a32.astype(np.float64), b32.astype(np.float64),
                    eps=0.4, iters=9, tol=0, precision="fp64", context=f"seed={seed}")
    assert rel_err(r32.cost, r64.cost) <= 1e-14, (r32.cost, r64.cost)


def test_quiet_and_threads_flags(run_solve):
    seed = 5008
    x, y, a, b = random_problem(seed, 70, 66, 5)
    one = run_solve(x, y, a, b, eps=1.0, iters=7, tol=0, precision="fp64", threads=1, context=f"seed={seed}")
    two = run_solve(x, y, a, b, eps=1.0, iters=7, tol=0, precision="fp64", threads=2, context=f"seed={seed}")
    # the thread count only changes how rows are split, never a row's own arithmetic: identical
    assert abs(one.cost - two.cost) <= 1e-13 * abs(one.cost), (one.cost, two.cost)
    assert one.stderr.strip() == "", f"--quiet printed to stderr: {one.stderr[:500]!r}"


# ----------------------------------------------------------------------------- bad input (item 7)
def _write_case(tmp_path, name):
    """Returns (args, out_dir) for one bad-input case."""
    rng = np.random.default_rng(5100)
    x, y = rng.normal(size=(8, 3)), rng.normal(size=(9, 3))
    a, b = rng.random(8) + 0.1, rng.random(9) + 0.1
    extra = []
    eps = "0.5"
    if name == "nan_x":
        x[2, 1] = np.nan
    elif name == "inf_y":
        y[0, 0] = np.inf
    elif name == "nan_a":
        a[3] = np.nan
    elif name == "inf_b":
        b[1] = np.inf
    elif name == "negative_a":
        a[0] = -0.1
    elif name == "zero_b":
        b[:] = 0
    elif name == "wrong_len_a":
        a = a[:-1]
    elif name == "different_d":
        y = y[:, :2].copy()
    elif name == "empty_x":
        x = np.zeros((0, 3))
        a = None
    elif name == "eps_zero":
        eps = "0"
    elif name == "eps_negative":
        eps = "-1"
    elif name == "eps_nan":
        eps = "nan"
    elif name == "eps_inf":
        eps = "inf"
    paths = {}
    for key, arr in (("x", x), ("y", y), ("a", a), ("b", b)):
        if arr is None:
            continue
        paths[key] = tmp_path / f"{key}.npy"
        np.save(paths[key], arr)
    if name == "not_npy":
        paths["x"].write_text("this is not an array\n")
        paths["x"] = paths["x"].rename(tmp_path / "x_text.npy")
    elif name == "truncated_npy":
        data = paths["y"].read_bytes()
        paths["y"].write_bytes(data[: len(data) - 20])
    out_dir = tmp_path / "out"
    if name == "unwritable_out":
        locked = tmp_path / "locked"
        locked.mkdir()
        os.chmod(locked, stat.S_IRUSR | stat.S_IXUSR)
        out_dir = locked / "out"
    args = ["solve"] + sum(([f"--{k}", str(p)] for k, p in paths.items()), []) + [
        "--eps", eps, "--iters", "3", "--tol", "0", "--device", device(), "--out", str(out_dir)] + extra
    return args, out_dir


BAD_CASES = ["nan_x", "inf_y", "nan_a", "inf_b", "negative_a", "zero_b", "wrong_len_a", "different_d", "empty_x",
             "eps_zero", "eps_negative", "eps_nan", "eps_inf", "not_npy", "truncated_npy", "unwritable_out"]


@pytest.mark.parametrize("name", BAD_CASES)
def test_bad_input(cli_binary, tmp_path, name):
    if name == "unwritable_out" and os.geteuid() == 0:
        pytest.skip("running as root: directory permissions do not stop writes")
    args, out_dir = _write_case(tmp_path, name)
    proc = run_cli(args)
    assert proc.returncode == 2, f"{name}: rc {proc.returncode}, stderr {proc.stderr!r}"
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, f"{name}: expected one line on stderr, got {lines!r}"
    assert proc.stdout.strip() == "", f"{name}: stdout {proc.stdout!r}"
    assert not out_dir.exists() or not any(out_dir.iterdir()), f"{name}: partial output {list(out_dir.iterdir())}"


def test_out_is_a_file(cli_binary, tmp_path):
    """--out pointing at an existing regular file is unwritable even as root."""
    args, _ = _write_case(tmp_path, "ok")
    blocker = tmp_path / "blocker"
    blocker.write_text("x")
    args[args.index("--out") + 1] = str(blocker)
    proc = run_cli(args)
    assert proc.returncode == 2, f"rc {proc.returncode}, stderr {proc.stderr!r}"
    assert blocker.read_text() == "x"


# ----------------------------------------------------------------------------- --grad
def _cli_cost(run_solve, x, y, a, b, **flags):
    return run_solve(x, y, a, b, out=False, **flags).cost


def test_grad_files_match_finite_differences_and_the_package(run_solve):
    """grad_x.npy / grad_y.npy / grad_a.npy are ∂cost/∂X, ∂cost/∂Y, ∂cost/∂a of the printed cost:
    central differences of the CLI's own cost (converged fp64 solves), and the package's streamed
    gradients of the same problem where the package is built."""
    seed = 5201
    x, y, a, b = random_problem(seed, 9, 8, 2, shift=0.5)
    flags = dict(eps=0.5, iters=100000, tol=1e-14, check_every=1, precision="fp64")
    out = run_solve(x, y, a, b, grad=True, context=f"seed={seed}", **flags)
    folder = out["out"]
    grad_x, grad_y = np.load(f"{folder}/grad_x.npy"), np.load(f"{folder}/grad_y.npy")
    grad_a, grad_b = np.load(f"{folder}/grad_a.npy"), np.load(f"{folder}/grad_b.npy")
    assert grad_x.dtype == np.float64 and grad_x.shape == (9, 2) and grad_y.shape == (8, 2)
    assert grad_a.shape == (9,) and grad_b.shape == (8,)
    # Central differences: truncation O(h²) ≈ 1e-10, convergence error 1e-14·|g|/h ≈ 1e-9.
    h = 1e-5
    for i, k in ((0, 0), (5, 1)):
        plus, minus = x.copy(), x.copy()
        plus[i, k] += h
        minus[i, k] -= h
        fd = (_cli_cost(run_solve, plus, y, a, b, **flags) - _cli_cost(run_solve, minus, y, a, b, **flags)) / (2 * h)
        assert abs(grad_x[i, k] - fd) <= 1e-7 + 1e-6 * abs(fd), f"seed={seed} dX[{i},{k}]: {grad_x[i, k]!r} vs {fd!r}"
    plus, minus = y.copy(), y.copy()
    plus[3, 1] += h
    minus[3, 1] -= h
    fd = (_cli_cost(run_solve, x, plus, a, b, **flags) - _cli_cost(run_solve, x, minus, a, b, **flags)) / (2 * h)
    assert abs(grad_y[3, 1] - fd) <= 1e-7 + 1e-6 * abs(fd), f"seed={seed} dY[3,1]: {grad_y[3, 1]!r} vs {fd!r}"
    plus, minus = a.copy(), a.copy()
    plus[2] += h
    minus[2] -= h
    fd = (_cli_cost(run_solve, x, y, plus, b, **flags) - _cli_cost(run_solve, x, y, minus, b, **flags)) / (2 * h)
    assert abs(grad_a[2] - fd) <= 1e-7 + 1e-6 * abs(fd), f"seed={seed} da[2]: {grad_a[2]!r} vs {fd!r}"

    core = pytest.importorskip("flashsinkhorn._core")  # noqa: F841  (the package, when built)
    import flashsinkhorn as fs
    s = fs.Solver(x, y, a, b, eps=0.5, iters=100000, tol=1e-14, check_every=1, precision="fp64", threads=1)
    s.solve()
    np.testing.assert_allclose(grad_x, s.gradient_x(), rtol=0, atol=1e-12, err_msg=f"seed={seed}")
    np.testing.assert_allclose(grad_y, s.gradient_y(), rtol=0, atol=1e-12, err_msg=f"seed={seed}")
    np.testing.assert_allclose(grad_a, s.gradient_a(), rtol=0, atol=1e-12, err_msg=f"seed={seed}")
    np.testing.assert_allclose(grad_b, s.gradient_b(), rtol=0, atol=1e-12, err_msg=f"seed={seed}")


def test_grad_files_follow_the_options(run_solve):
    """Debiased, with a reach on Y: grad_x is ∂S_ε/∂X (the package's), grad_b.npy is absent (no weight
    gradient on a side with reach), and fp32 writes float32."""
    seed = 5202
    x, y, a, b = random_problem(seed, 12, 10, 3)
    out = run_solve(x, y, a, b, eps=0.4, iters=200, tol=0, debias=True, reach_y=1.0, precision="fp32", grad=True,
                    context=f"seed={seed}")
    folder = out["out"]
    names = sorted(os.listdir(folder))
    assert names == ["f.npy", "g.npy", "grad_a.npy", "grad_x.npy", "grad_y.npy", "transport_x.npy"], names
    grad_x = np.load(f"{folder}/grad_x.npy")
    assert grad_x.dtype == np.float32 and grad_x.shape == (12, 3)
    pytest.importorskip("flashsinkhorn._core")
    import flashsinkhorn as fs
    s = fs.Solver(x, y, a, b, eps=0.4, iters=200, tol=0, debias=True, reach_y=1.0, precision="fp32", threads=1)
    s.solve()
    np.testing.assert_allclose(grad_x, s.gradient_x(), rtol=1e-5, atol=1e-6, err_msg=f"seed={seed}")


def test_grad_needs_out(cli_binary, tmp_path):
    args, out_dir = _write_case(tmp_path, "ok")
    cut = args.index("--out")
    proc = run_cli(args[:cut] + args[cut + 2:] + ["--grad"])
    assert proc.returncode == 2, f"rc {proc.returncode}, stderr {proc.stderr!r}"
    assert "--grad needs --out" in proc.stderr, proc.stderr
    assert proc.stdout.strip() == ""
    assert not out_dir.exists()


@pytest.mark.parametrize("name", ["nan_x", "wrong_len_a", "eps_zero"])
def test_grad_bad_input_leaves_no_output(cli_binary, tmp_path, name):
    args, out_dir = _write_case(tmp_path, name)
    proc = run_cli(args + ["--grad"])
    assert proc.returncode == 2, f"{name}: rc {proc.returncode}, stderr {proc.stderr!r}"
    assert proc.stdout.strip() == "", f"{name}: stdout {proc.stdout!r}"
    assert not out_dir.exists() or not any(out_dir.iterdir()), f"{name}: partial output {list(out_dir.iterdir())}"
