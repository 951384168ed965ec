"""The call-overhead mechanisms of the package (issue 6), checked as mechanisms — no timings here
(bench/python_call_overhead.py measures them): the core reads contiguous float32/float64 NumPy arrays
and CPU tensors in place (checked by address through the binding's `input_addresses`), copies only
layouts and dtypes it cannot read, hands the potentials back without a float64 intermediate or a
copy, torch results share the buffer the core wrote, and option objects are built once per argument
set."""

from __future__ import annotations

import gc
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("flashsinkhorn._core")
import flashsinkhorn as fs  # noqa: E402
from flashsinkhorn import _core  # noqa: E402
from flashsinkhorn._arrays import Frame  # noqa: E402
from flashsinkhorn._options import make_options, options_for  # noqa: E402

from package_helpers import random_problem  # noqa: E402

_OPTION_DEFAULTS = dict(cost="sqeuclidean", solver="alternating", scaling=None, diameter=None, iters=1000, tol=1e-4,
                        check_every=10, relaxation=1.0, reach=None, reach_x=None, reach_y=None, debias=False,
                        precision="fp32", device="auto", threads=0, normalize_weights=True, input_cuda_index=None)


def _points(dtype, seed=5):
    x, y, a, b = random_problem(seed, 17, 13, 3)
    return x.astype(dtype), y.astype(dtype), a.astype(dtype), b.astype(dtype)


def _addresses(solver):
    """(x, y, a, b, initial_f, initial_g): where the core reads each argument."""
    return solver._core.input_addresses


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_contiguous_numpy_inputs_are_read_in_place(dtype):
    """The core's views point into the caller's buffers: no copy on the way in, weights and warm start
    included. Fails if any layer (package or binding) copies or converts a readable array."""
    x, y, a, b = _points(dtype)
    f0, g0 = np.zeros(17, dtype), np.zeros(13, dtype)
    s = fs.Solver(x, y, a, b, eps=0.5, initial_f=f0, initial_g=g0, threads=1)
    assert _addresses(s) == tuple(v.ctypes.data for v in (x, y, a, b, f0, g0))
    # Row-strided views (a column slice of a wider array) and strided weights are readable too.
    wide = np.zeros((17, 9), dtype)
    wide[:, :3] = x
    strided_a = np.repeat(a, 2)[::2]
    s = fs.Solver(wide[:, :3], y, strided_a, b, eps=0.5, threads=1)
    assert _addresses(s)[:3] == (wide.ctypes.data, y.ctypes.data, strided_a.ctypes.data)


@pytest.mark.parametrize("dtype_name", ["float32", "float64"])
def test_cpu_tensors_are_read_in_place(dtype_name):
    torch = pytest.importorskip("torch")
    dtype = getattr(torch, dtype_name)
    x, y, a, b = (torch.from_numpy(v) for v in _points(getattr(np, dtype_name)))
    s = fs.Solver(x, y, a, b, eps=0.5, threads=1)
    assert _addresses(s)[:4] == tuple(v.data_ptr() for v in (x, y, a, b))
    xg = x.clone().requires_grad_(True)  # read in place too: nothing is recorded for the graph here
    assert _addresses(fs.Solver(xg, y, eps=0.5, threads=1))[0] == xg.data_ptr()
    assert x.dtype == dtype


def test_unreadable_inputs_are_copied_once_and_give_the_same_value():
    """Column stride ≠ 1, integer dtypes and lists are converted (so the address differs) — and the
    value is that of the contiguous float64 problem."""
    x, y, a, b = _points(np.float64)
    ref = fs.sinkhorn(x, y, a, b, eps=0.5, precision="fp64", threads=1).cost
    y_fortran = np.asfortranarray(y)
    s = fs.Solver(x, y_fortran, a, b, eps=0.5, precision="fp64", threads=1)
    assert _addresses(s)[1] != y_fortran.ctypes.data
    assert s.solve().cost == pytest.approx(ref, rel=1e-12)
    xi = np.round(x * 4).astype(np.int64)
    s = fs.Solver(xi, y, a.tolist(), b, eps=0.5, precision="fp64", threads=1)
    assert _addresses(s)[0] != xi.ctypes.data
    ref_int = fs.sinkhorn(xi.astype(np.float64), y, a, b, eps=0.5, precision="fp64", threads=1).cost
    assert s.solve().cost == pytest.approx(ref_int, rel=1e-12)


def test_tensor_with_the_negative_bit_is_resolved():
    """A real view with the negative bit set (the imaginary part of a conjugated complex tensor) is read
    as its values, not as the memory under it (DLPack cannot carry the bit)."""
    torch = pytest.importorskip("torch")
    gen = torch.Generator().manual_seed(3)
    z = torch.complex(torch.randn(9, 1, generator=gen, dtype=torch.float64),
                      torch.randn(9, 1, generator=gen, dtype=torch.float64))
    x = z.conj().imag  # shape (9, 1), row stride 2: a readable layout, but the negative bit is set
    assert x.is_neg()
    y = torch.randn(7, 1, generator=gen, dtype=torch.float64)
    got = fs.sinkhorn(x, y, eps=0.5, threads=1).cost
    want = fs.sinkhorn(x.resolve_neg().clone(), y, eps=0.5, threads=1).cost
    assert float(got) == pytest.approx(float(want), rel=1e-12)


@pytest.mark.parametrize("debias", [False, True])
def test_core_hands_float32_potentials_directly(debias):
    """Result.potentials(float32=True) rounds the float64 potentials once in C++: equal to the float64
    copy rounded, already float32, and owned by the core's capsule (not an astype of a NumPy array)."""
    x, y, _, _ = _points(np.float32)
    s = fs.Solver(x, y, eps=0.5, debias=debias)
    r = s._core.solve()
    f, g, f_aa, g_bb = r.potentials(True, debias)
    for got, ref in ((f, r.f), (g, r.g)) + (((f_aa, r.f_aa), (g_bb, r.g_bb)) if debias else ()):
        assert got.dtype == np.float32 and ref.dtype == np.float64
        np.testing.assert_array_equal(got, ref.astype(np.float32))
        assert not isinstance(got.base, np.ndarray)  # not a view or cast of another NumPy array
    assert (f_aa is None and g_bb is None) == (not debias)
    f64, *_ = r.potentials(False, debias)
    assert f64.dtype == np.float64
    np.testing.assert_array_equal(f64, r.f)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_numpy_result_keeps_the_core_buffer(dtype):
    """The returned potentials are the arrays the core produced (no further astype copy), equal to a
    second solve's Result.potentials."""
    x, y, _, _ = _points(dtype)
    r = fs.sinkhorn(x, y, eps=0.5, debias=True, threads=1)
    for v in (r.f, r.g, r.f_aa, r.g_bb):
        assert v.dtype == dtype and not isinstance(v.base, np.ndarray) and v.flags.writeable
    ref = fs.Solver(x, y, eps=0.5, debias=True, threads=1)._core.solve().potentials(dtype == np.float32, True)
    for got, want in zip((r.f, r.g, r.f_aa, r.g_bb), ref):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype_name", ["float32", "float64"])
def test_torch_outputs_share_the_buffer_the_core_wrote(dtype_name):
    """empty_host gives NumPy buffers and give_back wraps them with torch.from_numpy (zero-copy)."""
    torch = pytest.importorskip("torch")
    frame = Frame.of(torch.zeros(2, 2, dtype=getattr(torch, dtype_name)))
    out = frame.empty_host((4, 3))
    assert isinstance(out, np.ndarray) and out.dtype == np.dtype(dtype_name)
    t = frame.give_back(out)
    assert isinstance(t, torch.Tensor) and t.dtype == getattr(torch, dtype_name) and t.data_ptr() == out.ctypes.data
    x, y, _, _ = _points(getattr(np, dtype_name))
    r = fs.sinkhorn(torch.from_numpy(x), torch.from_numpy(y), eps=0.5)
    assert r.f.dtype == getattr(torch, dtype_name) and r.g.dtype == getattr(torch, dtype_name)
    assert r.cost.dtype == getattr(torch, dtype_name) and r.cost.shape == ()
    gx = r.solver.gradient_x()
    assert isinstance(gx, torch.Tensor) and gx.dtype == getattr(torch, dtype_name) and gx.shape == x.shape


@pytest.mark.parametrize("dtype_name", ["float32", "float64"])
@pytest.mark.parametrize("debias", [False, True])
def test_torch_results_come_from_the_cores_dlpack_capsules(dtype_name, debias):
    """For torch callers solve_fields(dlpack=True) gives the cost (0-d) and the potentials as host DLPack
    capsules that own the core's buffers: the tensors equal the NumPy caller's results, stay valid and
    writable after everything else is released, and capsules never consumed free their buffers."""
    torch = pytest.importorskip("torch")
    x, y, _, _ = _points(getattr(np, dtype_name))
    dtype = getattr(torch, dtype_name)
    r = fs.sinkhorn(torch.from_numpy(x), torch.from_numpy(y), eps=0.5, debias=debias, threads=1)
    ref = fs.sinkhorn(x, y, eps=0.5, debias=debias, threads=1)
    pairs = ((r.f, ref.f), (r.g, ref.g)) + (((r.f_aa, ref.f_aa), (r.g_bb, ref.g_bb)) if debias else ())
    for got, want in pairs:
        assert isinstance(got, torch.Tensor) and got.dtype == dtype and got.is_contiguous()
        np.testing.assert_array_equal(got.numpy(), want)
    assert r.cost.shape == () and r.cost.dtype == dtype
    assert float(r.cost) == float(np.asarray(ref.cost, dtype=np.dtype(dtype_name)))
    f, want = r.f, ref.f.copy()
    del r, ref, pairs
    gc.collect()
    f += 1  # the tensor owns the core's buffer now
    np.testing.assert_array_equal(f.numpy(), want + 1)
    fields = fs.Solver(x, y, eps=0.5, threads=1)._core.solve_fields(dtype_name == "float32", debias, True)
    assert all(type(v).__name__ == "PyCapsule" for v in (fields[0], *fields[9:11]))
    del fields  # unconsumed: the capsules' destructors free the buffers


def test_frames_are_shared():
    """NumPy and CPU-tensor frames are looked up, not built, per call."""
    x, y, _, _ = _points(np.float64)
    assert Frame.of(x, y, None, None) is Frame.of(x.copy(), y)
    assert Frame.of(x.astype(np.float32)).single and not Frame.of(x).single
    torch = pytest.importorskip("torch")
    t = torch.from_numpy(x)
    assert Frame.of(t, y) is Frame.of(t.clone()) and Frame.of(x, t).torch  # torch as soon as one tensor is given


def _options(**overrides):
    values = dict(_OPTION_DEFAULTS, **overrides)
    return options_for(*values.values())


def test_options_are_built_once_per_argument_set():
    a = _options(iters=7, tol=0.0, device="cpu")
    b = _options(iters=7, tol=0.0, device="cpu")
    c = _options(iters=8, tol=0.0, device="cpu")
    assert a is b and a is not c
    assert isinstance(a, _core.Options) and a.max_iterations == 7 and c.max_iterations == 8
    ref = make_options(iters=7, tol=0.0, precision="fp32", device="cpu")
    for name in ("cost", "solver", "precision", "device", "max_iterations", "tolerance", "check_every",
                 "relaxation", "scaling", "diameter", "reach_x", "reach_y", "debias", "normalize_weights", "cpu_threads"):
        assert getattr(a, name) == getattr(ref, name), name
    with pytest.raises(fs.InvalidArgument, match="cost"):
        _options(cost="nope")
    with pytest.raises(fs.InvalidArgument, match="cost"):  # errors are not cached away
        _options(cost="nope")



class _CoreCalls:
    """Stands in for flashsinkhorn._core in _functional and records which of its functions are called."""

    def __init__(self):
        self.called = []

    def __getattr__(self, name):
        value = getattr(_core, name)
        if callable(value) and not isinstance(value, type):
            def recorded(*args, **kwargs):
                self.called.append(name)
                return value(*args, **kwargs)
            return recorded
        return value


def _binding_calls(monkeypatch, call):
    from flashsinkhorn import _functional
    calls = _CoreCalls()
    monkeypatch.setattr(_functional, "_core", calls)
    result = call()
    return calls.called, result


@pytest.mark.parametrize("debias", [False, True])
def test_a_host_solve_crosses_into_the_binding_once(monkeypatch, debias):
    """sinkhorn() on NumPy arrays and CPU tensors: construction and solve in one binding call
    (new_solved; CPU tensors through _torch_calls, where built: _core's C entry on their addresses,
    no Python-level binding call at all, the outputs made by torch), the same result as the Solver
    path's two calls."""
    x, y, a, b = _points(np.float32)
    options = dict(eps=0.5, iters=20, tol=0, threads=1, debias=debias)
    want = fs.Solver(x, y, a, b, **options).solve()
    called, got = _binding_calls(monkeypatch, lambda: fs.sinkhorn(x, y, a, b, **options))
    assert called == ["new_solved"]
    assert got.cost == want.cost and np.array_equal(got.f, want.f) and np.array_equal(got.g, want.g)
    assert got.solver is not None and got.primal_cost == want.primal_cost  # the solver stays usable
    torch = pytest.importorskip("torch")
    from flashsinkhorn import _functional
    tx, ty, ta, tb = (torch.from_numpy(v) for v in (x, y, a, b))
    called, got = _binding_calls(monkeypatch, lambda: fs.sinkhorn(tx, ty, ta, tb, **options))
    assert called == (["new_solved"] if _functional._TORCH_CALLS is None else [])
    assert got.cost.shape == () and got.cost.dtype == torch.float32 and got.f.dtype == torch.float32
    assert float(got.cost) == float(np.float32(want.cost)) and torch.equal(got.f, torch.from_numpy(want.f))
    assert torch.equal(got.g, torch.from_numpy(want.g))
    if debias:
        assert torch.equal(got.f_aa, torch.from_numpy(want.f_aa)) and torch.equal(got.g_bb, torch.from_numpy(want.g_bb))
    assert got.solver._core.input_addresses[:4] == tuple(v.data_ptr() for v in (tx, ty, ta, tb))  # read in place
    assert got.primal_cost == pytest.approx(want.primal_cost, rel=1e-6)  # the solver stays usable
    assert torch.equal(got.solver.gradient_x(), torch.from_numpy(fs.Solver(x, y, a, b, **options).solve().solver.gradient_x()))


@pytest.mark.parametrize("debias", [False, True])
def test_a_cuda_solve_crosses_into_the_binding_once(monkeypatch, debias):
    """sinkhorn() on CUDA tensors: construction and solve in one call into the core — _core's C entry
    from flashsinkhorn._torch_calls where it was built (no Python-level binding call at all), else
    one binding call (new_solved_into) — the value written on the device into the 0-d cost tensor
    (no fill after the solve)."""
    torch = pytest.importorskip("torch")
    if not (torch.cuda.is_available() and _core.cuda_available()):
        pytest.skip("needs torch.cuda and a core built with CUDA")
    x, y, a, b = (torch.from_numpy(v).cuda() for v in _points(np.float32))
    options = dict(eps=0.5, iters=20, tol=0, debias=debias, precision="fp32")
    want = fs.Solver(x, y, a, b, **options).solve()
    from flashsinkhorn import _functional
    called, got = _binding_calls(monkeypatch, lambda: fs.sinkhorn(x, y, a, b, **options))
    if _functional._TORCH_CALLS is None:
        assert called[-1] == "new_solved_into" and "new_solver" not in called
    else:
        assert called == []
    assert got.solver._core.input_addresses[:4] == tuple(v.data_ptr() for v in (x, y, a, b))  # read in place
    assert got.cost.shape == () and got.cost.device == x.device and got.cost.dtype == torch.float32
    assert float(got.cost) == float(want.cost) and torch.equal(got.f, want.f) and torch.equal(got.g, want.g)
    if debias:
        assert torch.equal(got.f_aa, want.f_aa) and torch.equal(got.g_bb, want.g_bb)


@pytest.fixture(params=["torch_calls", "python"])
def short_path(request, monkeypatch):
    """The CUDA short path's two implementations: flashsinkhorn._torch_calls (C++ on at::Tensor) where it
    was built, and the Python one (its fallback). Returns the list of the short path's served calls."""
    torch = pytest.importorskip("torch")
    if not (torch.cuda.is_available() and _core.cuda_available()):
        pytest.skip("needs torch.cuda and a core built with CUDA")
    from flashsinkhorn import _functional
    if request.param == "torch_calls" and _functional._TORCH_CALLS is None:
        pytest.skip("flashsinkhorn._torch_calls is not built for this torch")
    if request.param == "python":
        monkeypatch.setattr(_functional, "_TORCH_CALLS", None)
    served = []
    solve = _functional._solve_plain_tensors

    def recorded(*args):
        result = solve(*args)
        if result is not None:
            served.append(1)
        return result
    monkeypatch.setattr(_functional, "_solve_plain_tensors", recorded)
    return served


def test_plain_cuda_calls_take_the_short_path_and_others_do_not(short_path):
    """_solve_plain_tensors serves CUDA tensors that need no derivative in the core's layout (the same
    result as the Solver path); a row-strided view, a warm start or device='cpu' take the general
    path, and so does a NumPy weight vector, which the core refuses by name (every array of a call
    in one memory). (A tensor that requires grad goes through the autograd Function, whose forward
    takes the short path on the detached inputs: the next test.)"""
    import torch
    served = short_path
    x, y, a, b = (torch.from_numpy(v).cuda() for v in _points(np.float32))
    options = dict(eps=0.5, iters=20, tol=0, precision="fp32")
    fs.sinkhorn(x, y, a, b, **options)  # the frame (made on the general path the first time)
    served.clear()
    plain = fs.Solver(x, y, a, b, **options).solve()  # OT_ε, what the general-path calls below must give
    for debias in (False, True):
        got = fs.sinkhorn(x, y, a, b, debias=debias, **options)
        want = fs.Solver(x, y, a, b, debias=debias, **options).solve()
        assert got.cost.shape == () and got.cost.device == x.device and got.f.device == x.device
        assert float(got.cost) == float(want.cost) and torch.equal(got.f, want.f) and torch.equal(got.g, want.g)
        if debias:
            assert torch.equal(got.f_aa, want.f_aa) and torch.equal(got.g_bb, want.g_bb)
    assert served == [1, 1]
    wide = torch.zeros(x.shape[0], 8, device="cuda")
    wide[:, :x.shape[1]] = x
    for call in (lambda: fs.sinkhorn(wide[:, :x.shape[1]], y, a, b, **options),
                 lambda: fs.sinkhorn(x, y, a, b, initial_f=plain.f, initial_g=plain.g, **options),
                 lambda: fs.sinkhorn(x, y, a, b, device="cpu", **options)):
        result = call()
        assert served == [1, 1]
        assert float(result.cost) == pytest.approx(float(plain.cost), rel=1e-3)  # the warm start: 20 more iterations
    with pytest.raises(fs.InvalidArgument, match="a lives in host memory but X lives in CUDA memory"):
        fs.sinkhorn(x, y, a.cpu().numpy(), b, **options)
    assert served == [1, 1]


def test_the_differentiable_forward_takes_the_short_path_on_cuda(short_path):
    """A cost that requires grad (SamplesLoss's case) solves its detached CUDA inputs on sinkhorn()'s
    short path (solve_plain), and its gradient equals the Solver path's."""
    import torch
    served = short_path
    x, y, a, b = (torch.from_numpy(v).cuda() for v in _points(np.float32))
    options = dict(eps=0.5, iters=20, tol=0, precision="fp32")
    fs.sinkhorn(x, y, a, b, **options)  # the frame
    served.clear()
    xg = x.clone().requires_grad_()
    (grad,) = torch.autograd.grad(fs.sinkhorn(xg, y, a, b, **options).cost, xg)
    assert served == [1]
    want = fs.Solver(x, y, a, b, **options)
    want.solve()
    torch.testing.assert_close(grad, want.gradient_x(), rtol=1e-6, atol=1e-7)


def test_torch_calls_declines_what_is_not_a_plain_call():
    """flashsinkhorn._torch_calls (where built): None for NumPy arrays, tensors of another dtype, device
    or layout than it reads by address, and tensors that require grad; a wrong number of arguments is
    a TypeError."""
    torch = pytest.importorskip("torch")
    from flashsinkhorn import _functional
    calls = _functional._TORCH_CALLS
    if calls is None:
        pytest.skip("flashsinkhorn._torch_calls is not built for this torch")

    def declined(x, y, a=None, b=None):
        return calls.solve_plain(x, y, a, b, 0.5, 1.0, None, False) is None
    x = torch.zeros(5, 3)
    assert declined(x.numpy(), x) and declined(x, x.numpy()) and declined(x.double(), x) and declined(x, x.half())
    assert declined(x, x.t().contiguous().t()) and declined(x.clone().requires_grad_(), x)
    assert declined(x, x, None, x[:, 0]) and declined(x.to_sparse(), x) and declined(x, x._neg_view())
    if torch.cuda.is_available():
        c = x.cuda()
        assert declined(c, c.t().contiguous().t()) and declined(c, c.half()) and declined(c, c, x[:, 0])
        assert declined(c.clone().requires_grad_(), c) and declined(c, c, None, c[:, 0])  # a column: strided
        assert declined(c.to_sparse(), c) and declined(c, c._neg_view())  # not strided; the negative bit
        assert declined(x, c) and declined(c, x)  # one device for all
    with pytest.raises(TypeError, match="takes 8 arguments"):
        calls.solve_plain(None, None)


@pytest.mark.parametrize("device", ["cpu", "cuda"])
@pytest.mark.parametrize("dtype_name", ["float32", "float64"])
def test_torch_calls_enters_the_core_like_the_general_path(device, dtype_name):
    """_torch_calls calls the core through its C entry (the capsule _core._solve_into_entry): the same
    potentials and value as the general path (sinkhorn() without _torch_calls), plain and debiased,
    with a solver that reads the caller's tensors; and the library's errors with the library's
    message, raised through that entry (eps <= 0, a NaN point), or a TypeError for options that are
    not a _core.Options."""
    torch = pytest.importorskip("torch")
    from flashsinkhorn import _functional
    calls = _functional._TORCH_CALLS
    if calls is None:
        pytest.skip("flashsinkhorn._torch_calls is not built for this torch")
    if device == "cuda" and not (torch.cuda.is_available() and _functional._core_has_cuda()):
        pytest.skip("no CUDA device or a core without CUDA")
    assert "flashsinkhorn._core._solve_into_entry" in repr(_core._solve_into_entry)
    dtype = getattr(torch, dtype_name)
    x, y, a, b = (torch.from_numpy(v).to(device=device, dtype=dtype) for v in random_problem(11, 19, 23, 3))
    precision = "fp32" if dtype_name == "float32" else "fp64"
    for debias in (False, True):
        options = _options(iters=30, tol=0.0, debias=debias, precision=precision, device="auto", threads=1,
                           input_cuda_index=x.get_device() if device == "cuda" else None)
        f, g, value, f_aa, g_bb, fields = calls.solve_plain(x, y, a, b, 0.5, 1.0, options, debias)
        assert fields[0].input_addresses[:4] == tuple(t.data_ptr() for t in (x, y, a, b))  # read in place
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(_functional, "_TORCH_CALLS", None)
            want = fs.sinkhorn(x, y, a, b, eps=0.5, iters=30, tol=0.0, debias=debias, precision=precision, threads=1)
        assert value.shape == () and value.dtype == dtype and value.device == x.device
        assert torch.equal(value, want.cost) and torch.equal(f, want.f) and torch.equal(g, want.g)
        assert fields[1:4] == (want.iterations, want.marginal_error, want.converged)
        if debias:
            assert torch.equal(f_aa, want.f_aa) and torch.equal(g_bb, want.g_bb)
        else:
            assert f_aa is None and g_bb is None
    options = _options(iters=30, tol=0.0, precision=precision, threads=1,
                       input_cuda_index=x.get_device() if device == "cuda" else None)
    with pytest.raises(fs.InvalidArgument, match="^eps must be a positive finite number, got -1$"):
        calls.solve_plain(x, y, a, b, -1.0, 1.0, options, False)
    with pytest.raises(fs.InvalidArgument, match="^eps must be a positive finite number, got -1$"):
        fs.sinkhorn(x, y, a, b, eps=-1)  # sinkhorn() meets it on the same path
    nan_x = x.clone()
    nan_x[3, 1] = float("nan")
    with pytest.raises(fs.InvalidArgument, match=r"^X contains NaN at row 3, column 1$"):
        calls.solve_plain(nan_x, y, a, b, 0.5, 1.0, options, False)
    with pytest.raises(TypeError, match="flashsinkhorn._core.Options"):
        calls.solve_plain(x, y, a, b, 0.5, 1.0, "options", False)


@pytest.mark.parametrize("device", ["cpu", "cuda"])
@pytest.mark.parametrize("dtype_name", ["float32", "float64"])
def test_torch_calls_outputs_share_one_block_and_stay_apart(device, dtype_name):
    """_torch_calls makes the potentials as views of one allocation at 512-byte offsets and the value
    in an allocation of its own: f, g, f_aa, g_bb never overlap (a write into one leaves the others
    as solved), and the 0-d value keeps no potentials alive."""
    torch = pytest.importorskip("torch")
    from flashsinkhorn import _functional
    if _functional._TORCH_CALLS is None:
        pytest.skip("flashsinkhorn._torch_calls is not built for this torch")
    if device == "cuda" and not (torch.cuda.is_available() and _functional._core_has_cuda()):
        pytest.skip("no CUDA device or a core without CUDA")
    dtype = getattr(torch, dtype_name)
    x, y, _, _ = (torch.from_numpy(v).to(device=device, dtype=dtype) for v in random_problem(7, 37, 29, 3))
    fs.sinkhorn(x, y, eps=0.5, debias=True)  # the first CUDA call makes the frame; later ones take the short path
    result = fs.sinkhorn(x, y, eps=0.5, debias=True)
    reference = fs.sinkhorn(x.cpu().numpy(), y.cpu().numpy(), eps=0.5, debias=True)
    outputs = [result.f, result.g, result.f_aa, result.g_bb]
    block = result.f.untyped_storage().data_ptr()
    assert all(t.untyped_storage().data_ptr() == block for t in outputs)
    assert all((t.data_ptr() - block) % 512 == 0 for t in outputs)
    assert result.cost.untyped_storage().data_ptr() != block
    assert result.cost.untyped_storage().nbytes() == result.cost.element_size()
    tolerance = dict(rtol=1e-5, atol=1e-6) if dtype_name == "float32" else dict(rtol=1e-12, atol=1e-12)
    for k, t in enumerate(outputs):
        t.fill_(float("nan"))  # a write into one output leaves every other one as solved
        for later, want in zip(outputs[k + 1:], [reference.f, reference.g, reference.f_aa, reference.g_bb][k + 1:]):
            np.testing.assert_allclose(later.cpu().numpy(), want, **tolerance)
    assert float(result.cost) == pytest.approx(reference.cost, rel=1e-5)


def test_torch_calls_refuses_another_torch_version():
    """_torch_calls is built against one torch and imports under that version only (ImportError,
    which the package turns into its Python path)."""
    torch = pytest.importorskip("torch")
    from flashsinkhorn import _functional
    if _functional._TORCH_CALLS is None:
        pytest.skip("flashsinkhorn._torch_calls is not built for this torch")
    code = ("import torch; torch.__version__ = '0.0.0'\n"
            "try:\n    import flashsinkhorn._torch_calls\nexcept ImportError as e:\n    print('refused:', e)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert "refused: flashsinkhorn._torch_calls was built for torch " + torch.__version__ in done.stdout, done.stderr


def test_device_outputs_take_the_frames_dtype_and_device():
    """_device_outputs (the tensors solve_into writes): f (n,), g (m,), f_aa, g_bb when debiased and a
    0-d cost, in the frame's working dtype and device, whether made by `like.new_empty` or by
    torch.empty (a `like` of another dtype)."""
    torch = pytest.importorskip("torch")
    from flashsinkhorn._functional import _device_outputs
    for like in (torch.zeros(4, 3, dtype=torch.float64), torch.zeros(4, 3, dtype=torch.float16), None):
        frame = Frame.of(torch.zeros(4, 3, dtype=torch.float64))
        f, g, f_aa, g_bb, cost = _device_outputs(frame, 4, 5, True, like)
        assert [tuple(t.shape) for t in (f, g, f_aa, g_bb, cost)] == [(4,), (5,), (4,), (5,), ()]
        assert all(t.dtype == torch.float64 and t.device == frame.device and not t.requires_grad
                   for t in (f, g, f_aa, g_bb, cost))
        assert _device_outputs(frame, 4, 5, False, like)[2:4] == (None, None)


def test_plain_autograd_skips_the_setup_context_binding():
    """Outside torch.func, the differentiable cost comes from the forward(ctx, ...) Function (torch binds
    a setup_context forward's arguments through inspect on every call); under torch.func.grad the
    setup_context one runs. Both give the same gradient."""
    torch = pytest.importorskip("torch")
    x, y, _, _ = (torch.from_numpy(v) for v in _points(np.float64))
    options = dict(eps=0.5, iters=30, tol=0, threads=1)
    xr = x.clone().requires_grad_(True)
    cost = fs.sinkhorn(xr, y, **options).cost
    assert type(cost.grad_fn).__name__ == "_PlainSinkhornFunctionBackward"
    (plain,) = torch.autograd.grad(cost, xr)
    transformed = torch.func.grad(lambda p: fs.sinkhorn(p, y, **options).cost)(x)
    assert torch.allclose(plain, transformed, rtol=1e-12, atol=1e-14)


def test_torch_calls_refuses_a_core_without_its_entry():
    """_torch_calls imports _core's C entry when it loads; a _core without it (another build) is an
    ImportError, which the package turns into its Python path, not an AttributeError."""
    pytest.importorskip("torch")
    from flashsinkhorn import _functional
    if _functional._TORCH_CALLS is None:
        pytest.skip("flashsinkhorn._torch_calls is not built for this torch")
    code = ("import os; os.environ['FLASHSINKHORN_TORCH_CALLS'] = '0'\n"
            "import flashsinkhorn._core as core; del core._solve_into_entry\n"
            "try:\n    import flashsinkhorn._torch_calls\nexcept ImportError as e:\n    print('refused:', e)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert "refused: flashsinkhorn._torch_calls needs flashsinkhorn._core._solve_into_entry" in done.stdout, (
        done.stdout + done.stderr)
