"""A fake driver of the benchmark suite (bench/suite/run.py) for tests/python/test_bench_suite.py: no GPU,
no peer. Each variant succeeds below n = FAIL_AT and, from there on, fails in its own way. It runs in the
suite's child process, where bench/suite is on sys.path (so `protocol` imports)."""

from __future__ import annotations

import os
import signal
import time

import protocol

FAIL_AT = 400


def run(case, variant: str):
    if variant == "fake-slow-start":  # a first case that compiles for a while, then fast ones
        time.sleep(4 if case.n < FAIL_AT else 0)
        return {"ms": 1.0}, None
    if variant == "fake-counted":  # protocol's timing loop, on a call that counts itself
        calls = []
        timing, _ = protocol.time_wall(lambda: calls.append(1), case)
        return {**timing, "calls": len(calls)}, None
    if case.n < FAIL_AT or variant == "fake-ok":
        return {"ms": 1.0, "iterations_given": case.iters}, None
    if variant == "fake-sleep":
        time.sleep(60)  # far beyond the test's budget: the parent must kill the process
        return {"ms": 60e3}, None
    if variant == "fake-sleep-timed":  # the first call is done, the timed ones never end
        protocol.first_call_done(4.5)
        time.sleep(60)
        return {"ms": 60e3}, None
    elif variant == "fake-crash":
        os.kill(os.getpid(), signal.SIGKILL)  # dies by a signal, with no core dump and no result line
    elif variant == "fake-allocate":  # 2 GiB touched: fails only under run.py --memory-limit
        block = bytearray(2 * 2**30)
        return {"ms": float(len(block) > 0)}, None
    elif variant == "fake-oom":
        raise RuntimeError("CUDA out of memory. Tried to allocate 20.00 GiB (fake)")
    elif variant == "fake-error":
        raise ValueError("boom")
    elif variant == "fake-unsupported":
        raise protocol.Unsupported("no such mode")
    raise AssertionError(f"unknown fake variant {variant!r}")
