"""sinkhorn()'s and Solver's `progress=`: a callback at every convergence check and at the end, a
line per check on stderr with True, Ctrl-C and the callback's exceptions ending a long solve."""

from __future__ import annotations

import os
import signal
import threading
import time

import numpy as np
import pytest

pytest.importorskip("flashsinkhorn._core")
import flashsinkhorn as fs  # noqa: E402

try:
    import torch
except ImportError:  # the NumPy paths are tested without it
    torch = None


def _clouds(n: int = 120, m: int = 100, d: int = 3, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, d)), rng.normal(size=(m, d)) + 0.5


def test_the_callback_sees_every_check_and_the_end():
    x, y = _clouds()
    steps: list = []
    r = fs.sinkhorn(x, y, eps=0.1, tol=1e-10, check_every=7, threads=1, progress=steps.append)
    assert all(isinstance(s, fs.Progress) for s in steps)
    # one report per block of 7 iterations but the last (the final report replaces it), then the end
    assert [s.iteration for s in steps[:-1]] == list(range(7, r.iterations, 7))
    assert [s.finished for s in steps] == [False] * (len(steps) - 1) + [True]
    end = steps[-1]
    assert end.iteration == r.iterations and end.max_iterations == 1000 and end.eps == pytest.approx(0.1)
    assert end.marginal_error == pytest.approx(r.marginal_error) and end.marginal_error <= 1e-10 < steps[0].marginal_error
    assert all(b.elapsed_seconds >= a.elapsed_seconds for a, b in zip(steps, steps[1:]))
    assert "finished" in repr(end) and f"iteration={r.iterations}/1000" in repr(end)


def test_progress_does_not_change_the_solve_nor_stay_in_the_cached_options():
    x, y = _clouds(seed=1)
    plain = fs.sinkhorn(x, y, eps=0.1, tol=1e-9, threads=1)
    seen: list = []
    reported = fs.sinkhorn(x, y, eps=0.1, tol=1e-9, threads=1, progress=seen.append)
    np.testing.assert_array_equal(reported.f, plain.f)
    assert reported.iterations == plain.iterations and seen
    count = len(seen)
    fs.sinkhorn(x, y, eps=0.1, tol=1e-9, threads=1)  # the same options from the cache: no callback
    assert len(seen) == count


def test_true_prints_a_line_per_check_on_stderr(capsys):
    """With ε-scaling: every 10th stage of the schedule at its own ε, then the checks at ε and the end."""
    x, y = _clouds(seed=2)
    r = fs.sinkhorn(x, y, eps=0.1, scaling=0.7, iters=25, tol=0, check_every=10, threads=1, progress=True)
    lines = capsys.readouterr().err.splitlines()
    total = r.iterations
    stages = total - 25
    schedule = [k for k in range(10, stages + 1, 10)]
    assert len(lines) == len(schedule) + 3 and all(line.startswith("flashsinkhorn: iteration ") for line in lines)
    for line, k in zip(lines, schedule):
        assert line.startswith(f"flashsinkhorn: iteration {k}/{total}  eps ") and "eps 0.1 " not in line
    assert lines[len(schedule)].startswith(f"flashsinkhorn: iteration {stages + 10}/{total}  eps 0.1  marginal error ")
    assert lines[-1].endswith("(done)") and f"iteration {total}/{total}" in lines[-1]


def test_the_solver_reports_each_solve():
    x, y = _clouds(seed=3)
    steps: list = []
    solver = fs.Solver(x, y, eps=0.1, iters=20, tol=0, check_every=10, threads=1, progress=steps.append)
    solver.solve()
    solver.solve()  # continues from the potentials: a second run of reports
    assert [s.iteration for s in steps] == [10, 20, 10, 20] and [s.finished for s in steps] == [False, True] * 2
    assert steps[3].marginal_error < steps[1].marginal_error


class _Enough(Exception):
    pass


def test_what_the_callback_raises_ends_the_solve():
    x, y = _clouds(seed=4)
    calls: list = []

    def stop_after_three(step):
        calls.append(step.iteration)
        if len(calls) == 3:
            raise _Enough(f"stopped at {step.iteration}")

    with pytest.raises(_Enough, match="stopped at 30"):
        fs.sinkhorn(x, y, eps=0.01, iters=100000, tol=0, check_every=10, threads=1, progress=stop_after_three)
    assert calls == [10, 20, 30]


def test_ctrl_c_stops_a_long_solve_at_its_next_check():
    """SIGINT while the core iterates with the GIL released: without a callback the solve would run all
    its iterations (minutes here); with one, the next check raises KeyboardInterrupt."""
    x, y = _clouds(n=1500, m=1500, d=3, seed=5)
    # Python's own handler, whatever this process inherited: a shell's background job starts with
    # SIGINT ignored, and Python then installs none (the signal would be lost, the solve run on).
    inherited = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(0.3, os.kill, args=(os.getpid(), signal.SIGINT))
    started = time.perf_counter()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            fs.sinkhorn(x, y, eps=0.01, iters=10**6, tol=0, check_every=10, progress=lambda step: None)
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, inherited)
    assert time.perf_counter() - started < 30


def test_a_progress_that_is_not_callable_is_refused():
    x, y = _clouds(seed=6)
    with pytest.raises(fs.InvalidArgument, match="progress must be a callable"):
        fs.sinkhorn(x, y, eps=0.1, progress=3)


@pytest.mark.skipif(torch is None, reason="torch not installed")
def test_torch_paths_report_too(capsys):
    x, y = (torch.tensor(v, requires_grad=i == 0) for i, v in enumerate(_clouds(seed=7)))
    steps: list = []
    value = fs.sinkhorn(x, y, eps=0.1, tol=1e-8, threads=1, progress=steps.append).cost  # the autograd path
    value.backward()
    assert steps and steps[-1].finished and x.grad is not None and torch.isfinite(x.grad).all()
    fs.SamplesLoss(blur=0.3, verbose=True)(x.detach(), y)
    assert capsys.readouterr().err.count("(done)") == 1


@pytest.mark.skipif(torch is None or not torch.cuda.is_available() or not fs.cuda_available(),
                    reason="needs torch with CUDA and a CUDA build")
def test_cuda_tensors_report_on_their_short_path():
    x, y = (torch.tensor(v, dtype=torch.float32, device="cuda") for v in _clouds(seed=8))
    plain = fs.sinkhorn(x, y, eps=0.1, tol=1e-5)
    steps: list = []
    r = fs.sinkhorn(x, y, eps=0.1, tol=1e-5, progress=steps.append)
    assert steps[-1].finished and steps[-1].iteration == r.iterations == plain.iterations
    assert r.f.device.type == "cuda" and torch.equal(r.f, plain.f)
