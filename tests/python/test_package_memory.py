"""The solvers' own device-memory counters (flashsinkhorn._memory): torch.cuda's names and device
arguments; zeros without CUDA; on a GPU a solve's buffers show in the peak and go back to the pool."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("flashsinkhorn._core")
import flashsinkhorn as fs  # noqa: E402


def test_bad_devices_are_named():
    with pytest.raises(ValueError, match="device must be"):
        fs.max_memory_allocated("tpu")
    with pytest.raises(fs.InvalidArgument, match="device must be >= 0"):
        fs.memory_allocated(-1)


def test_counts_are_zero_without_cuda():
    if fs.cuda_available():
        pytest.skip("a GPU is present")
    fs.reset_peak_memory_stats()
    assert (fs.memory_allocated(), fs.max_memory_allocated(0), fs.memory_reserved("cuda:0")) == (0, 0, 0)
    torch = pytest.importorskip("torch")
    assert fs.max_memory_allocated(torch.device("cuda:1")) == 0 and fs.memory_allocated("cuda") == 0


def test_a_solve_on_the_gpu_shows_in_the_peak():
    torch = pytest.importorskip("torch")
    if not (fs.cuda_available() and torch.cuda.is_available()):
        pytest.skip("needs a CUDA device and a CUDA build of flashsinkhorn")
    rng = np.random.default_rng(3)
    x = torch.tensor(rng.standard_normal((4001, 16)), dtype=torch.float32, device="cuda")
    y = torch.tensor(rng.standard_normal((3001, 16)), dtype=torch.float32, device="cuda")
    fs.sinkhorn(x, y, eps=0.5, iters=5, tol=0)  # the pool exists from here on
    torch.cuda.synchronize()
    idle = fs.memory_allocated()
    fs.reset_peak_memory_stats()
    assert fs.max_memory_allocated() == idle
    result = fs.sinkhorn(x, y, eps=0.5, iters=5, tol=0)
    torch.cuda.synchronize()
    live = fs.memory_allocated(x.device)  # the result's solver keeps its buffers
    assert live >= idle + (4001 + 3001) * 16 * 4  # at least the clouds' storage
    assert fs.max_memory_allocated("cuda") >= live and fs.memory_reserved() >= live
    del result
    torch.cuda.synchronize()
    assert fs.memory_allocated() == idle
    assert fs.max_memory_allocated() >= live
