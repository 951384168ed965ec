"""The Python package's surface: framework in → framework out, dtypes, shapes, the Solver's
streamed products against the float64 dense reference, and errors carrying the C++ message."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("flashsinkhorn._core")
import flashsinkhorn as fs  # noqa: E402
from flashsinkhorn._options import make_options  # noqa: E402

import dense_reference as dr  # noqa: E402
from package_helpers import converged_kwargs, plan_of, random_problem  # noqa: E402



def test_version_and_exports():
    assert fs.__version__ == "0.1.0"
    assert fs.__core_version__ == "0.1.0"
    for name in ("sinkhorn", "Solver", "SamplesLoss", "apply_plan", "barycentric_map", "SinkhornResult",
                 "InvalidArgument", "Unsupported", "CudaError", "OutOfMemory", "Error", "cuda_available", "empty_cache"):
        assert hasattr(fs, name), name
    fs.empty_cache()  # gives the CUDA pools' cached memory back; a no-op without CUDA
    assert issubclass(fs.InvalidArgument, ValueError) and issubclass(fs.InvalidArgument, fs.Error)
    assert issubclass(fs.Unsupported, NotImplementedError)
    assert issubclass(fs.CudaError, RuntimeError)
    assert issubclass(fs.OutOfMemory, MemoryError)


def test_the_package_is_a_scripts_first_import():
    """`import flashsinkhorn` before anything else, in a fresh interpreter, then a solve (on CUDA
    tensors where torch sees a GPU): on the H200 machine the extension loaded before torch made torch's
    own import crash (flashsinkhorn/__init__.py)."""
    import os
    import subprocess
    import sys
    script = ("import flashsinkhorn as fs, numpy as np\n"
              "x = np.arange(12, dtype=np.float64).reshape(4, 3) / 12\n"
              "print('cpu', fs.sinkhorn(x, x[::-1].copy(), eps=1.0).iterations > 0)\n"
              "try:\n    import torch\nexcept ImportError:\n    torch = None\n"
              "if torch is not None and torch.cuda.is_available() and fs.cuda_available():\n"
              "    t = torch.from_numpy(x).cuda()\n"
              "    print('cuda', fs.sinkhorn(t, t.flip(0).contiguous(), eps=1.0).cost.is_cuda)\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    done = subprocess.run([sys.executable, "-X", "faulthandler", "-c", script], capture_output=True, text=True,
                          env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "cpu True" in done.stdout
    assert "cuda False" not in done.stdout


@pytest.mark.parametrize("dtype,precision", [(np.float64, "fp64"), (np.float32, "fp32")])
def test_numpy_in_numpy_out(dtype, precision):
    x, y, a, b = random_problem(11, 23, 31, 3)
    x, y, a, b = (v.astype(dtype) for v in (x, y, a, b))
    r = fs.sinkhorn(x, y, a, b, eps=0.5)
    assert isinstance(r, fs.SinkhornResult)
    assert isinstance(r.f, np.ndarray) and isinstance(r.g, np.ndarray)
    assert r.f.dtype == dtype and r.g.dtype == dtype
    assert r.f.shape == (23,) and r.g.shape == (31,)
    assert isinstance(r.cost, float) and isinstance(r.primal_cost, float)
    assert isinstance(r.iterations, int) and isinstance(r.converged, bool)
    assert (r.device == "cpu" or r.device.startswith("cuda")) and r.eps == 0.5 and r.seconds > 0
    assert r.converged and r.marginal_error <= 1e-4


def test_default_precision_follows_dtype():
    """float64 inputs are solved in fp64 (one point each: the value is C = ‖x − y‖² exactly)."""
    r = fs.sinkhorn(np.array([[0.0, 1.0]]), np.array([[1.0, 1.0]]), eps=0.1)
    assert r.cost == pytest.approx(1.0, rel=1e-14)


def test_lists_and_integer_arrays_are_accepted():
    r = fs.sinkhorn([[0, 0], [1, 0]], [[0, 1], [1, 1]], eps=0.5)
    assert r.f.dtype == np.float64


def test_nested_tuples_are_points_not_device_addresses():
    """Six points as a tuple of tuples: the binding's device-address form is a 6-tuple too, told apart
    by its first item (_core.DEVICE_ADDRESS), so user tuples are converted by NumPy as lists are."""
    points = ((0, 0), (1, 0), (0, 1), (2, 2), (3, 1), (1, 3))
    want = fs.sinkhorn(np.array(points, dtype=float), np.array(points[::-1], dtype=float), eps=0.5).cost
    assert fs.sinkhorn(points, points[::-1], eps=0.5).cost == pytest.approx(want, rel=1e-14)


def test_a_device_address_without_a_cuda_backend_is_refused_by_name():
    """The device-address form (arrays.hpp) claims CUDA memory: without a CUDA backend the core
    refuses it with a message naming the argument (a CUDA build without a driver: the CUDA runtime's
    error, before any read of the pointer)."""
    from flashsinkhorn import _core
    from flashsinkhorn._options import options_for
    if fs.cuda_available():
        pytest.skip("a CUDA build reads device addresses (tests/python/test_package_cuda_inputs.py)")
    x = np.zeros((3, 2))
    options = options_for("sqeuclidean", "alternating", None, None, 10, 0.0, 10, 1.0, None, None, None, False, "fp64",
                          "auto", 0, True, None)
    address = (_core.DEVICE_ADDRESS, x, x.ctypes.data, x.shape, False, 0)
    with pytest.raises((fs.Unsupported, fs.CudaError)) as refused:
        _core.new_solver(address, x, None, None, 0.5, 1.0, None, None, options)
    assert isinstance(refused.value, fs.CudaError) or "X lives in CUDA memory" in str(refused.value)


def test_strided_and_readonly_inputs_match_contiguous():
    x, y, a, b = random_problem(12, 30, 20, 4)
    want = fs.sinkhorn(x, y, a, b, eps=0.3, **converged_kwargs()).cost
    wide = np.zeros((30, 9))
    wide[:, :4] = x  # row stride 9, column stride 1: passed without a copy
    x_view = wide[:, :4]
    y_fortran = np.asfortranarray(y)  # column stride ≠ 1: copied once by the binding
    y_fortran.setflags(write=False)
    a_strided = np.repeat(a, 2)[::2]  # stride 2
    got = fs.sinkhorn(x_view, y_fortran, a_strided, b, eps=0.3, **converged_kwargs()).cost
    assert got == pytest.approx(want, rel=1e-13)


def test_solver_products_match_dense_reference():
    x, y, a, b = random_problem(13, 37, 29, 3)
    eps = 0.2
    solver = fs.Solver(x, y, a, b, eps=eps, **converged_kwargs())
    r = solver.solve()
    prob = dr.DenseProblem(x, y, a, b, eps=eps)
    P = plan_of(prob, r.f, r.g)
    rng = np.random.default_rng(5)
    V, U = rng.normal(size=(29, 5)), rng.normal(size=(37, 2))
    np.testing.assert_allclose(solver.apply_plan(V), P @ V, rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(solver.apply_plan(V[:, 0]), P @ V[:, 0], rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(solver.apply_plan_transpose(U), P.T @ U, rtol=1e-9, atol=1e-12)
    T = (P @ y) / P.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(solver.barycentric_projection(), T, rtol=1e-10, atol=1e-12)
    grad_x = 2 * (P.sum(axis=1)[:, None] * x - P @ y)  # ∇_x = 2s(a_i x_i − (P·Y)_i), s = 1
    np.testing.assert_allclose(solver.gradient_x(), grad_x, rtol=1e-8, atol=1e-11)
    grad_y = 2 * (P.sum(axis=0)[:, None] * y - P.T @ x)
    np.testing.assert_allclose(solver.gradient_y(), grad_y, rtol=1e-8, atol=1e-11)
    assert solver.gradient_a().shape == (37,) and solver.gradient_b().shape == (29,)
    # the functional forms solve again and give the same
    np.testing.assert_allclose(fs.apply_plan(x, y, V, a, b, eps=eps, **converged_kwargs()), P @ V,
                               rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(fs.apply_plan(x, y, U, a, b, eps=eps, transpose=True, **converged_kwargs()),
                               P.T @ U, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(fs.barycentric_map(x, y, a, b, eps=eps, **converged_kwargs()), T,
                               rtol=1e-10, atol=1e-12)


def test_result_keeps_its_solver_and_warm_start():
    x, y, a, b = random_problem(14, 20, 25, 2)
    r = fs.sinkhorn(x, y, a, b, eps=0.2, **converged_kwargs())
    assert r.solver is not None and r.solver.gradient_x().shape == (20, 2)
    warm = fs.sinkhorn(x, y, a, b, eps=0.2, initial_f=r.f, initial_g=r.g, **converged_kwargs())
    assert warm.iterations <= 2 and warm.cost == pytest.approx(r.cost, rel=1e-12)


def test_debias_potentials_and_diameter_reach_the_core():
    x, y, a, b = random_problem(12, 9, 8, 2)
    r = fs.sinkhorn(x, y, a, b, eps=0.1, threads=1)
    assert r.f_aa is None and r.g_bb is None
    r = fs.sinkhorn(x, y, a, b, eps=0.1, debias=True, threads=1)
    assert isinstance(r.f_aa, np.ndarray) and r.f_aa.shape == (9,) and r.g_bb.shape == (8,)
    assert r.f_aa.dtype == np.float64
    r32 = fs.sinkhorn(x.astype(np.float32), y.astype(np.float32), eps=0.1, debias=True, threads=1)
    assert r32.f_aa.dtype == np.float32 and r32.g_bb.dtype == np.float32
    # diameter: the schedule starts at diameter² (GeomLoss's ε list, one iteration per ε).
    eps, scaling = 0.01, 0.5
    for diameter in (0.3, 100.0):
        r = fs.sinkhorn(x, y, eps=eps, cost_scale=0.5, solver="symmetric", scaling=scaling, diameter=diameter,
                        iters=0, tol=0, precision="fp64", threads=1)
        assert r.iterations == len(dr.epsilon_schedule(diameter, np.sqrt(eps), scaling))
        s = fs.Solver(x, y, eps=eps, scaling=scaling, diameter=diameter, iters=0, tol=0, threads=1)
        assert s.solve().iterations == r.iterations
    o = make_options(diameter=2)
    assert o.diameter == 2.0 and make_options().diameter is None


def test_gradient_before_solve_is_invalid():
    x, y, _, _ = random_problem(15, 5, 6, 2)
    with pytest.raises(fs.InvalidArgument, match="call solve\\(\\) first"):
        fs.Solver(x, y, eps=0.1).gradient_x()


@pytest.mark.parametrize("kwargs,x_shape,y_shape,message", [
    (dict(eps=0.1), (5, 2), (6, 3), "X has dimension d = 2 but Y has d = 3"),
    (dict(eps=-1.0), (5, 2), (6, 2), "eps must be a positive finite number, got -1"),
    (dict(eps=0.1, scaling=1.5), (5, 2), (6, 2), "scaling must lie in \\(0, 1\\), got 1.5"),
    (dict(eps=0.1, scaling=0.5, diameter=0.0), (5, 2), (6, 2), "diameter must be a positive finite number"),
    (dict(eps=0.1), (5,), (6, 2), "X must be a 2-d array"),
    (dict(eps=0.1, solver="sideways"), (5, 2), (6, 2), "solver must be one of"),
    (dict(eps=0.1, device="tpu"), (5, 2), (6, 2), "device must be"),
])
def test_bad_input_raises_invalid_argument(kwargs, x_shape, y_shape, message):
    rng = np.random.default_rng(0)
    with pytest.raises(fs.InvalidArgument, match=message):
        fs.sinkhorn(rng.normal(size=x_shape), rng.normal(size=y_shape), **kwargs)


def test_nan_and_weight_errors_carry_the_cpp_message():
    x, y, a, b = random_problem(16, 5, 6, 2)
    x[2, 1] = np.nan
    with pytest.raises(fs.InvalidArgument, match="X contains NaN at row 2, column 1"):
        fs.sinkhorn(x, y, eps=0.1)
    x, y, a, b = random_problem(16, 5, 6, 2)
    with pytest.raises(fs.InvalidArgument, match="a has 4 weights but X has 5 points"):
        fs.sinkhorn(x, y, a[:4], b, eps=0.1)
    with pytest.raises(ValueError):  # InvalidArgument is a ValueError
        fs.sinkhorn(x, y, a, b, eps=0.0)


def test_unsupported_cuda_request():
    if fs.cuda_available():
        pytest.skip("this build has CUDA and a GPU")
    x, y, _, _ = random_problem(17, 5, 6, 2)
    with pytest.raises(fs.Unsupported, match="device cuda was requested"):
        fs.sinkhorn(x, y, eps=0.1, device="cuda")


def test_weight_gradient_with_reach_is_unsupported():
    x, y, a, b = random_problem(18, 5, 6, 2)
    s = fs.Solver(x, y, a, b, eps=0.5, reach=1.0)
    s.solve()
    with pytest.raises(fs.Unsupported, match="balanced sides only"):
        s.gradient_a()


# ----------------------------------------------------------------------------- torch
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_torch_in_torch_out(dtype):
    torch = pytest.importorskip("torch")
    x, y, a, b = random_problem(21, 23, 31, 3)
    t = lambda v: torch.tensor(v, dtype=getattr(torch, dtype))
    r = fs.sinkhorn(t(x), t(y), t(a), t(b), eps=0.5)
    assert isinstance(r.f, torch.Tensor) and isinstance(r.g, torch.Tensor)
    assert isinstance(r.cost, torch.Tensor) and r.cost.dim() == 0
    assert r.f.dtype == getattr(torch, dtype) and r.cost.dtype == getattr(torch, dtype)
    assert r.f.device.type == "cpu"
    numpy_r = fs.sinkhorn(x.astype(dtype), y.astype(dtype), a.astype(dtype), b.astype(dtype), eps=0.5)
    np.testing.assert_allclose(r.f.numpy(), numpy_r.f, rtol=0, atol=0)
    r = fs.sinkhorn(t(x), t(y), t(a), t(b), eps=0.5, debias=True, threads=1)
    assert isinstance(r.f_aa, torch.Tensor) and r.f_aa.dtype == getattr(torch, dtype) and r.g_bb.shape == (31,)
    s = fs.Solver(t(x), t(y), eps=0.5)
    s.solve()
    assert isinstance(s.gradient_x(), torch.Tensor) and s.gradient_x().dtype == getattr(torch, dtype)
    assert isinstance(s.apply_plan(t(np.ones((31, 2)))), torch.Tensor)


def test_torch_noncontiguous_and_requires_grad_inputs():
    torch = pytest.importorskip("torch")
    x, y, _, _ = random_problem(22, 20, 15, 3)
    xt = torch.tensor(x.T.copy()).T  # column stride ≠ 1
    yt = torch.tensor(y, requires_grad=True)
    with torch.no_grad():
        r = fs.sinkhorn(xt, yt, eps=0.5, **converged_kwargs())
    assert r.cost.grad_fn is None
    want = fs.sinkhorn(x, y, eps=0.5, **converged_kwargs()).cost
    assert float(r.cost) == pytest.approx(want, rel=1e-13)


def test_cuda_tensors_round_trip():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    x, y, _, _ = random_problem(23, 40, 30, 3)
    xt = torch.tensor(x, device="cuda", requires_grad=True)
    yt = torch.tensor(y, device="cuda")
    r = fs.sinkhorn(xt, yt, eps=0.5, **converged_kwargs())
    assert r.f.device.type == "cuda" and r.cost.device.type == "cuda"
    r.cost.backward()
    assert xt.grad.device.type == "cuda"
    want = fs.sinkhorn(x, y, eps=0.5, device="cpu", **converged_kwargs())
    assert float(r.cost) == pytest.approx(want.cost, rel=1e-10)


def test_solves_release_the_gil():
    """While a solve runs in another thread, this thread keeps running Python: the longest pause
    between two of its loop iterations stays far below the solve's duration (it would equal it if
    the binding held the GIL)."""
    import threading
    import time

    x, y, a, b = random_problem(60, 400, 400, 3)
    done = threading.Event()
    span = {}

    def solve():
        start = time.perf_counter()
        # On the CPU: a GPU, where present, finishes this in milliseconds (too short to tell).
        fs.sinkhorn(x, y, a, b, eps=0.01, iters=150, tol=0, threads=1, device="cpu")
        span["seconds"] = time.perf_counter() - start
        done.set()

    worker = threading.Thread(target=solve)
    worker.start()
    last, longest_pause = time.perf_counter(), 0.0
    while not done.is_set():
        now = time.perf_counter()
        longest_pause, last = max(longest_pause, now - last), now
    worker.join()
    assert span["seconds"] > 0.05, "the solve was too short to tell"
    assert longest_pause < 0.5 * span["seconds"], (longest_pause, span["seconds"])
