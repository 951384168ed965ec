"""The call-overhead mechanisms of the package (issue 6), checked as mechanisms — no timings here
(bench/python_call_overhead.py measures them): float32 potentials come out of the core already in
float32 (no float64 intermediate), CPU tensors reach the core as zero-copy NumPy views, torch results
share the buffer the core wrote, and option objects are built once per argument set."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("flashsinkhorn._core")
import flashsinkhorn as fs  # noqa: E402
from flashsinkhorn import _core  # noqa: E402
from flashsinkhorn._arrays import Frame, host_array  # noqa: E402
from flashsinkhorn._options import cached_options, make_options  # noqa: E402

from package_helpers import random_problem  # noqa: E402


def _points(dtype):
    x, y, _, _ = random_problem(5, 17, 13, 3)
    return x.astype(dtype), y.astype(dtype)


@pytest.mark.parametrize("debias", [False, True])
def test_core_hands_float32_potentials_directly(debias):
    """Result.potentials(float32=True) rounds the float64 potentials once in C++: equal to the float64
    copy rounded, already float32, and owned by the core's capsule (not an astype of a NumPy array)."""
    x, y = _points(np.float32)
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
    """The returned potentials are the arrays the core produced (no further astype copy)."""
    x, y = _points(dtype)
    r = fs.sinkhorn(x, y, eps=0.5, debias=True)
    for v in (r.f, r.g, r.f_aa, r.g_bb):
        assert v.dtype == dtype and not isinstance(v.base, np.ndarray)


def test_cpu_tensor_reaches_the_core_as_a_numpy_view():
    torch = pytest.importorskip("torch")
    x = torch.randn(7, 3, dtype=torch.float32)
    frame = Frame.of(x)
    host = host_array(x, frame)
    assert isinstance(host, np.ndarray) and host.dtype == np.float32
    assert host.ctypes.data == x.data_ptr()  # the same memory: no copy
    g = x.clone().requires_grad_(True)
    assert host_array(g, frame).ctypes.data == g.data_ptr()  # detached view, still no copy


@pytest.mark.parametrize("dtype_name", ["float32", "float64"])
def test_torch_outputs_share_the_buffer_the_core_wrote(dtype_name):
    """empty_host gives NumPy buffers and give_back wraps them with torch.from_numpy (zero-copy)."""
    torch = pytest.importorskip("torch")
    frame = Frame.of(torch.zeros(2, 2, dtype=getattr(torch, dtype_name)))
    out = frame.empty_host((4, 3))
    assert isinstance(out, np.ndarray) and out.dtype == np.dtype(dtype_name)
    t = frame.give_back(out)
    assert isinstance(t, torch.Tensor) and t.dtype == getattr(torch, dtype_name) and t.data_ptr() == out.ctypes.data
    x, y = _points(getattr(np, dtype_name))
    r = fs.sinkhorn(torch.from_numpy(x), torch.from_numpy(y), eps=0.5)
    assert r.f.dtype == getattr(torch, dtype_name) and r.g.dtype == getattr(torch, dtype_name)
    gx = r.solver.gradient_x()
    assert isinstance(gx, torch.Tensor) and gx.dtype == getattr(torch, dtype_name) and gx.shape == x.shape


def test_options_are_built_once_per_argument_set():
    a = cached_options(iters=7, tol=0.0, precision="fp32", device="cpu")
    b = cached_options(iters=7, tol=0.0, precision="fp32", device="cpu")
    c = cached_options(iters=8, tol=0.0, precision="fp32", device="cpu")
    assert a is b and a is not c
    assert isinstance(a, _core.Options) and a.max_iterations == 7 and c.max_iterations == 8
    ref = make_options(iters=7, tol=0.0, precision="fp32", device="cpu")
    for name in ("cost", "solver", "precision", "device", "max_iterations", "tolerance", "check_every",
                 "scaling", "diameter", "reach_x", "reach_y", "debias", "normalize_weights", "cpu_threads"):
        assert getattr(a, name) == getattr(ref, name), name
    with pytest.raises(fs.InvalidArgument, match="cost"):
        cached_options(cost="nope")
    with pytest.raises(fs.InvalidArgument, match="cost"):  # errors are not cached away
        cached_options(cost="nope")
