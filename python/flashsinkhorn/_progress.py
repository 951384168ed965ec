"""The `progress` argument of sinkhorn() and Solver: a solve's progress at every convergence check."""

from __future__ import annotations

import sys
from typing import Any, Callable, Union

from . import _core

Progress = _core.Progress
ProgressArgument = Union[Callable[[Progress], Any], bool, None]


def print_progress(step: Progress) -> None:
    """progress=True: one line per check on stderr, as the command-line tool prints when not on a terminal."""
    print(f"flashsinkhorn: iteration {step.iteration}/{step.max_iterations}  eps {step.eps:.4g}  "
          f"marginal error {step.marginal_error:.3e}  elapsed {step.elapsed_seconds:.2f}s"
          + ("  (done)" if step.finished else ""), file=sys.stderr, flush=True)


def with_progress(options: Any, progress: ProgressArgument) -> Any:
    """The core options for a call's `progress`: the (cached, shared) options themselves for None or
    False, else a copy that calls `progress` (print_progress for True) with a flashsinkhorn.Progress
    at every convergence check and at the end. The callback runs on the calling thread; a pending
    Ctrl-C and anything it raises end the solve with that exception."""
    if progress is None or progress is False:
        return options
    return _core.with_progress(options, print_progress if progress is True else progress)
