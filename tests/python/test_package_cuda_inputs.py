"""CUDA tensors read in place (solver.hpp, "CUDA inputs"): the forward solve and the x, y gradients on
CUDA tensors move no array between host and device — shown twice, by the library's own count
(Solver._core.transfers) and by torch.profiler's CUDA activity (no Memcpy HtoD/DtoH larger than a few
scalars) — and agree with the same call on CPU tensors (the host path). Bad values on the GPU raise
the host path's messages. Skips without torch, a CUDA device, or a CUDA build of the extension."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("flashsinkhorn._core")
torch = pytest.importorskip("torch")
import flashsinkhorn as fs  # noqa: E402

from package_helpers import random_problem  # noqa: E402

pytestmark = pytest.mark.skipif(not (torch.cuda.is_available() and fs.cuda_available()),
                                reason="needs a CUDA device and a CUDA build of flashsinkhorn")

# Larger than any scalar read (the validation flags are 80 bytes): a copy of one potential of this
# problem is ≥ 4·N bytes.
N, M, D = 3001, 2503, 5
SCALAR_BYTES = 128


def _tensors(seed, n, m, d, dtype, device, requires_grad=False):
    x, y, a, b = random_problem(seed, n, m, d)
    return tuple(torch.tensor(v, dtype=dtype, device=device, requires_grad=requires_grad and v.ndim == 2)
                 for v in (x, y, a, b))


def _memcpy_sizes(prof, tmp_path):
    """(name, bytes) of every memcpy between host and device in a torch.profiler trace (its chrome
    export carries the bytes of each gpu_memcpy event)."""
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    events = json.loads(path.read_text())["traceEvents"]
    copies = []
    for e in events:
        name = e.get("name", "")
        if e.get("cat") == "gpu_memcpy" and ("HtoD" in name or "DtoH" in name):
            copies.append((name, int(e.get("args", {}).get("bytes", -1))))
    return copies


@pytest.mark.parametrize("debias", [False, True])
def test_forward_and_gradients_copy_no_arrays_profiler(tmp_path, debias):
    from torch.profiler import ProfilerActivity, profile

    x, y, a, b = _tensors(1, N, M, D, torch.float32, "cuda", requires_grad=True)
    fs.sinkhorn(x, y, a, b, eps=0.5, iters=20, tol=0, debias=debias).cost.backward()  # warm-up: loads, caches
    x.grad = y.grad = None
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        r = fs.sinkhorn(x, y, a, b, eps=0.5, iters=200, tol=1e-6, debias=debias)
        r.cost.backward()
        torch.cuda.synchronize()
    copies = _memcpy_sizes(prof, tmp_path)
    assert copies, "the profiler recorded no host-device copy at all (the marginal-error reads must show)"
    assert all(0 <= size <= SCALAR_BYTES for _, size in copies), sorted(copies, key=lambda c: -c[1])[:5]
    assert r.f.device.type == "cuda" and x.grad.device.type == "cuda" and y.grad.device.type == "cuda"


@pytest.mark.parametrize("options", [{}, dict(debias=True), dict(cost="cosine")], ids=["plain", "debias", "cosine"])
def test_forward_and_gradients_copy_no_arrays_counter(options):
    x, y, a, b = _tensors(2, N, M, D, torch.float64, "cuda")
    s = fs.Solver(x, y, a, b, eps=0.5, iters=200, tol=1e-8, **options)
    r = s.solve()
    gx, gy = s.gradient_x(), s.gradient_y()
    t = s._core.transfers
    assert t["host_to_device_bytes"] == 0, t
    assert t["largest_copy_bytes"] <= SCALAR_BYTES, t
    assert gx.device.type == gy.device.type == r.f.device.type == r.g.device.type == "cuda"
    assert r.cost.device.type == "cuda"


def test_the_counter_sees_the_host_paths():
    """The counter is not blind: host tensors upload their clouds, and a host path on CUDA inputs
    (barycentric_projection) copies the inputs to the host once."""
    xh, yh, ah, bh = _tensors(3, N, M, D, torch.float32, "cpu")
    on_host = fs.Solver(xh, yh, ah, bh, eps=0.5, device="cuda")
    assert on_host._core.transfers["largest_copy_bytes"] >= N * D * 4
    x, y, a, b = (t.cuda() for t in (xh, yh, ah, bh))
    s = fs.Solver(x, y, a, b, eps=0.5)
    s.solve()
    assert s._core.transfers["largest_copy_bytes"] <= SCALAR_BYTES
    projection = s.barycentric_projection()
    assert projection.device.type == "cuda"
    assert s._core.transfers["largest_copy_bytes"] >= N * D * 4


CONFIGURATIONS = {
    "alternating": {},
    "symmetric_scaling": dict(solver="symmetric", scaling=0.7),
    "debiased": dict(debias=True),
    "unbalanced": dict(reach=1.5),
    "cosine": dict(cost="cosine"),
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("name", sorted(CONFIGURATIONS))
def test_cuda_inputs_match_the_host_path(name, dtype):
    """Values, potentials and gradients of CUDA tensors (prepared on the GPU) against the same call on
    CPU tensors with device='cuda' (prepared on the host, same backend): the preparations differ only in
    the order of their sums, so the results agree to a few units of the working precision."""
    kwargs = dict(eps=0.8, iters=50, tol=0, device="cuda", **CONFIGURATIONS[name])
    host = _tensors(4, 517, 129, 7, dtype, "cpu", requires_grad=True)
    gpu = tuple(t.detach().cuda().requires_grad_(t.requires_grad) for t in host)
    want, got = fs.sinkhorn(*host, **kwargs), fs.sinkhorn(*gpu, **kwargs)
    want.cost.backward()
    got.cost.backward()
    rel = 1e-11 if dtype == torch.float64 else 2e-6
    scale = max(1.0, float(want.f.abs().max()))
    assert got.iterations == want.iterations
    assert float(got.cost) == pytest.approx(float(want.cost), abs=rel * scale)
    assert got.primal_cost == pytest.approx(want.primal_cost, abs=rel * scale)
    assert got.relative_entropy == pytest.approx(want.relative_entropy, abs=rel * scale / 0.8)
    for g_got, g_want in ((got.f, want.f), (got.g, want.g), (got.f_aa, want.f_aa), (got.g_bb, want.g_bb)):
        if g_want is not None:
            assert g_got.device.type == "cuda" and g_got.dtype == dtype
            np.testing.assert_allclose(g_got.detach().cpu().numpy(), g_want.detach().numpy(), rtol=0, atol=rel * scale)
    for t_got, t_want in zip(gpu[:2], host[:2]):
        grad_scale = max(1e-12, float(t_want.grad.abs().max()))
        np.testing.assert_allclose(t_got.grad.cpu().numpy(), t_want.grad.numpy(), rtol=0, atol=10 * rel * grad_scale)


def test_samples_loss_forward_on_cuda_tensors_copies_no_arrays(tmp_path):
    from torch.profiler import ProfilerActivity, profile

    loss = fs.SamplesLoss("sinkhorn", p=2, blur=0.5)
    x, y, _, _ = _tensors(5, N, M, D, torch.float32, "cuda", requires_grad=True)
    loss(x, y).backward()  # warm-up
    x.grad = None
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        value = loss(x, y)
        value.backward()
        torch.cuda.synchronize()
    assert all(0 <= size <= SCALAR_BYTES for _, size in _memcpy_sizes(prof, tmp_path))
    want = fs.SamplesLoss("sinkhorn", p=2, blur=0.5)(x.detach().cpu(), y.detach().cpu())
    assert float(value) == pytest.approx(float(want), rel=1e-4, abs=1e-6)


def test_a_side_stream_orders_the_call():
    """On a side stream the inputs written just before the call are the ones read."""
    x, y, a, b = _tensors(6, 300, 200, 3, torch.float64, "cuda")
    side = torch.cuda.Stream()
    want = fs.sinkhorn(x.cpu(), y.cpu(), a.cpu(), b.cpu(), eps=0.5, device="cuda")
    with torch.cuda.stream(side):
        side.wait_stream(torch.cuda.current_stream())
        x2 = torch.full_like(x, float("nan"))
        torch.cuda._sleep(100_000_000)  # keeps the side stream busy before the real values land
        x2.copy_(x)
        got = fs.sinkhorn(x2, y, a, b, eps=0.5)
    torch.cuda.synchronize()
    assert float(got.cost) == pytest.approx(float(want.cost), rel=1e-10)


@pytest.mark.parametrize("debias", [False, True])
def test_gradients_enqueued_in_the_forward_are_the_backward_ones(debias):
    """On CUDA tensors the forward enqueues the point gradients its inputs need (_Solve.start_gradients)
    and hands them to the caller's stream with an event, not a host wait: backward's gradients equal
    Solver.gradient_x / gradient_y of the same solve made without autograd; a second backward through
    the retained graph (which computes them again) gives the same; and only the inputs that require
    grad get one."""
    x, y, a, b = _tensors(8, 4000, 3500, 3, torch.float32, "cuda")
    options = dict(eps=0.3, iters=15, tol=0, debias=debias)
    plain = fs.sinkhorn(x, y, a, b, **options)
    want_x, want_y = plain.solver.gradient_x(), plain.solver.gradient_y()
    xg, yg = x.clone().requires_grad_(True), y.clone().requires_grad_(True)
    cost = fs.sinkhorn(xg, yg, a, b, **options).cost
    got_x, got_y = torch.autograd.grad(3.0 * cost, (xg, yg), retain_graph=True)
    assert torch.allclose(got_x, 3.0 * want_x, rtol=1e-5, atol=1e-7)
    assert torch.allclose(got_y, 3.0 * want_y, rtol=1e-5, atol=1e-7)
    again_x, again_y = torch.autograd.grad(cost, (xg, yg))
    assert torch.allclose(again_x, want_x, rtol=1e-5, atol=1e-7)
    assert torch.allclose(again_y, want_y, rtol=1e-5, atol=1e-7)
    from flashsinkhorn import _autograd
    made = []
    original = _autograd._Solve.start_gradients
    _autograd._Solve.start_gradients = lambda self, x_, y_: made.append((x_, y_)) or original(self, x_, y_)
    try:
        fs.sinkhorn(xg, y, a, b, **options)
    finally:
        _autograd._Solve.start_gradients = original
    assert made == [(True, False)]


BAD_VALUES = [
    ("x", (7, 2), float("nan"), "X contains NaN at row 7, column 2"),
    ("y", (3, 0), float("-inf"), "Y contains Inf at row 3, column 0"),
    ("b", (5,), -0.5, "b has a negative weight -0.5 at index 5"),
    ("a", None, 0.0, "a: all weights are zero"),
]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("which, where, value, message", BAD_VALUES)
def test_bad_values_on_the_gpu_raise_the_host_message(which, where, value, message, dtype):
    tensors = dict(zip("xyab", _tensors(7, 40, 30, 4, dtype, "cpu")))
    if where is None:
        tensors[which][:] = value
    else:
        tensors[which][where] = value
    with pytest.raises(fs.InvalidArgument) as on_host:
        fs.sinkhorn(*tensors.values(), eps=0.5, device="cuda")
    assert str(on_host.value) == message
    with pytest.raises(fs.InvalidArgument) as on_gpu:
        fs.sinkhorn(*(t.cuda() for t in tensors.values()), eps=0.5)
    assert str(on_gpu.value) == message
    torch.cuda.synchronize()  # the device is still usable


def test_zero_row_under_the_cosine_cost_on_the_gpu():
    x, y, _, _ = _tensors(8, 40, 30, 4, torch.float32, "cuda")
    y[4] = 0
    with pytest.raises(fs.InvalidArgument, match="Y row 4 is zero; the cosine cost is undefined for it"):
        fs.sinkhorn(x, y, eps=0.5, cost="cosine")


def test_warm_start_from_cuda_potentials_stays_on_the_gpu():
    x, y, a, b = _tensors(9, N, M, D, torch.float64, "cuda")
    first = fs.sinkhorn(x, y, a, b, eps=0.4, iters=7, tol=0)
    s = fs.Solver(x, y, a, b, eps=0.4, iters=7, tol=0, initial_f=first.f, initial_g=first.g)
    got = s.solve()
    assert s._core.transfers["largest_copy_bytes"] <= SCALAR_BYTES
    host = [t.cpu() for t in (x, y, a, b)]
    want = fs.sinkhorn(*host, eps=0.4, iters=7, tol=0, device="cuda", initial_f=first.f.cpu(), initial_g=first.g.cpu())
    assert float(got.cost) == pytest.approx(float(want.cost), rel=1e-11)
    np.testing.assert_allclose(got.f.cpu().numpy(), want.f.numpy(), rtol=0, atol=1e-10)
    bad = first.g.clone()
    bad[3] = float("inf")
    with pytest.raises(fs.InvalidArgument, match="initial_g is not finite at index 3"):
        fs.sinkhorn(x, y, a, b, eps=0.4, initial_f=first.f, initial_g=bad)


def test_hvp_on_cuda_tensors_stays_on_the_gpu():
    """Solver.hvp / hvp_xy on CUDA tensors: the direction is read and the product written in place on
    the GPU (the HVP's n·d matrices live there, core/matrix_store.hpp); the same products as on CPU
    tensors (the host path); per product less than one n·d matrix moves between host and device (after
    the first product, which copies the inputs' host side once: solver.hpp)."""
    n, m, d = 801, 703, 64
    x, y, a, b = _tensors(5, n, m, d, torch.float64, "cuda")
    direction = torch.randn(n, d, dtype=torch.float64, device="cuda", generator=torch.Generator("cuda").manual_seed(7))
    s = fs.Solver(x, y, a, b, eps=4.0, iters=500, tol=1e-10)
    s.solve()
    first = s.hvp(direction, tol=1e-10)
    before = s._core.transfers
    product = s.hvp(direction, tol=1e-10)
    joint = s.hvp_xy(direction, None, tol=1e-10)
    after = s._core.transfers
    moved = sum(after[k] - before[k] for k in ("host_to_device_bytes", "device_to_host_bytes"))
    assert product.product.device.type == "cuda"
    assert joint.product_x.device.type == "cuda" and joint.product_y.device.type == "cuda"
    assert moved < 2 * n * d * 8, (moved, n * d * 8)  # two products, each below one n·d float64 matrix
    cpu = fs.Solver(*(t.cpu() for t in (x, y, a, b)), eps=4.0, iters=500, tol=1e-10, device="cpu")
    cpu.solve()
    want = cpu.hvp(direction.cpu(), tol=1e-10).product
    for got in (first.product, product.product, joint.product_x):
        assert torch.allclose(got.cpu(), want, rtol=1e-7, atol=1e-9 * float(want.abs().max()))


def test_a_warm_call_allocates_no_device_memory_from_the_driver():
    """The solver's buffers come from flashsinkhorn's memory pool (device_memory_pool.hpp): after a
    first call of a size, another call makes no cudaMalloc or cudaFree (torch's own tensors come
    from its caching allocator). fs.empty_cache() gives the pool's memory back to the driver, and
    the next call still solves."""
    import gc

    from torch.profiler import ProfilerActivity, profile

    gc.collect()  # earlier tests' solvers (and their pooled blocks) go first
    # Large enough (tens of MB of buffers) that the pool's blocks for it are not shared with a
    # buffer of some solver still alive, so that empty_cache below can give them back.
    x, y, a, b = _tensors(5, 60_000, 60_000, D, torch.float32, "cuda")

    def driver_calls():
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            fs.sinkhorn(x, y, a, b, eps=0.5, iters=20, tol=0)
            torch.cuda.synchronize()
        names = [e.name for e in prof.events()]
        return sum(n == "cudaMalloc" for n in names), sum(n == "cudaFree" for n in names)

    fs.sinkhorn(x, y, a, b, eps=0.5, iters=20, tol=0)  # the pool takes what this size needs
    assert driver_calls() == (0, 0)
    torch.cuda.synchronize()
    free_before = torch.cuda.mem_get_info()[0]
    fs.empty_cache()
    assert torch.cuda.mem_get_info()[0] > free_before  # the pool's cache went back to the driver
    r = fs.sinkhorn(x, y, a, b, eps=0.5, iters=20, tol=0)  # and the pool grows again
    assert torch.isfinite(r.cost)


def test_the_current_stream_is_the_callers():
    """current_stream reads torch's current stream of the tensors' GPU: the default stream, and a
    side stream inside `with torch.cuda.stream(...)` (the raw getter agrees with torch.cuda's)."""
    from flashsinkhorn._arrays import Frame, current_stream

    x = torch.zeros(4, 2, device="cuda")
    frame = Frame.of(x, x, None, None)
    assert current_stream(frame) == torch.cuda.current_stream().cuda_stream
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        assert current_stream(frame) == side.cuda_stream != torch.cuda.default_stream().cuda_stream


def test_cuda_frames_are_shared_per_dtype_and_gpu():
    from flashsinkhorn._arrays import Frame

    x32, x64 = torch.zeros(3, 2, device="cuda"), torch.zeros(3, 2, device="cuda", dtype=torch.float64)
    assert Frame.of(x32, x32, None, None) is Frame.of(torch.ones(5, 2, device="cuda"), None, None, None)
    f32, f64 = Frame.of(x32, x32, None, None), Frame.of(x64, x64, None, None)
    assert f32 is not f64 and f32.single and not f64.single
    assert f32.cuda_index == x32.get_device() and f32.device == x32.device and not f32.on_host
    half = Frame.of(torch.zeros(3, 2, device="cuda", dtype=torch.float16), None, None, None)
    assert half.dtype == torch.float32  # the working dtype of other float types


def test_every_readable_layout_matches_the_contiguous_call():
    """C-contiguous CUDA tensors go to the core by address (including views with a storage offset),
    other readable layouts as DLPack capsules (rows wider than d), unreadable ones as copies made on
    the GPU (a transpose, a stride-0 expansion): the same problem gives the same result each way, and
    the address form keeps its tensors alive for the solver's later passes."""
    from flashsinkhorn._arrays import Frame, core_array, device_address

    x, y, a, b = _tensors(7, 301, 257, 4, torch.float32, "cuda")
    kwargs = dict(eps=0.5, iters=30, tol=0)
    want = fs.sinkhorn(x, y, a, b, **kwargs)
    frame = Frame.of(x, y, a, b)
    assert type(core_array(x, frame)) is tuple and type(device_address(x)) is tuple  # the address form
    offset = torch.cat([torch.zeros(1, 4, device="cuda"), x])[1:]  # contiguous, storage offset 4
    wide = torch.zeros(301, 9, device="cuda")
    wide[:, :4] = x  # row stride 9: a capsule
    assert type(core_array(wide[:, :4], frame)) is not tuple
    transposed = y.t().contiguous().t()  # column stride ≠ 1: copied on the GPU
    a_strided = torch.repeat_interleave(a, 2)[::2]
    layouts = [(offset, y, a, b), (wide[:, :4], y, a, b), (x, transposed, a, b), (x, y, a_strided, b)]
    for xs, ys, as_, bs in layouts:
        got = fs.sinkhorn(xs, ys, as_, bs, **kwargs)
        assert float(got.cost) == pytest.approx(float(want.cost), rel=1e-6)
        torch.testing.assert_close(got.f, want.f, rtol=0, atol=1e-5)
    solver = fs.sinkhorn(x.clone(), y.clone(), a, b, **kwargs).solver  # its inputs' only references
    garbage = [torch.full_like(t, float("nan")) for t in (x, y) for _ in range(4)]  # would reuse freed blocks
    torch.testing.assert_close(solver.gradient_x(), want.solver.gradient_x(), rtol=0, atol=1e-5)
    del garbage


def test_wrong_dimensions_on_the_gpu_are_named():
    """A 3-d or 0-d cloud, or 2-d weights, passed by device address: the core names the argument and
    its dimensions, as for host arrays (the short path leaves that check to it)."""
    x, y, a, b = _tensors(8, 40, 30, 3, torch.float32, "cuda")
    fs.sinkhorn(x, y, a, b, eps=0.5, iters=5, tol=0)  # the frame
    with pytest.raises(fs.InvalidArgument, match="X must be a 2-d array .* got 3 dimensions"):
        fs.sinkhorn(x.reshape(40, 3, 1), y, a, b, eps=0.5, iters=5, tol=0)
    with pytest.raises(fs.InvalidArgument, match="a must be a 1-d array, got 2 dimensions"):
        fs.sinkhorn(x, y, a.reshape(40, 1), b, eps=0.5, iters=5, tol=0)
    with pytest.raises(fs.InvalidArgument, match="Y must be a 2-d array .* got 0 dimensions"):
        fs.sinkhorn(x, y[0, 0], a, b, eps=0.5, iters=5, tol=0)
