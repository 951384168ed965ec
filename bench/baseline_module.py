"""An older copy of one of the package's modules, loaded beside the current one for in-process A/Bs
(bench/python_path_ab_probe.py, bench/autograd_backward_ab_probe.py)."""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType


def load_baseline(path: str, name: str) -> ModuleType:
    """The file at `path` (e.g. `git show REV:python/flashsinkhorn/_functional.py`) as the module
    flashsinkhorn.<name>_baseline: its relative imports resolve to the installed package, so only
    that one file differs from the current code."""
    spec = importlib.util.spec_from_file_location(f"flashsinkhorn.{name}_baseline", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module
