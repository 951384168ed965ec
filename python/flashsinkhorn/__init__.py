"""flashsinkhorn: streaming entropic optimal transport.

  OT_ε(a, b) = min_{P ∈ Π(a,b)} ⟨P, C⟩ + ε·KL(P ‖ a⊗b),  C_ij = s·‖x_i − y_j‖²,
  P_ij = a_i b_j exp((f_i + g_j − C_ij)/ε)  (GeomLoss's convention for the potentials f, g),

solved by Sinkhorn iterations that never form the n×m matrices. Entry points: `sinkhorn()`,
`Solver` (plan products, gradients and implicit derivatives of the potentials after a solve), `apply_plan()`, `barycentric_map()`, and
`SamplesLoss` (a drop-in for GeomLoss's, differentiable with torch); `progress=` on a solve reports
it at every convergence check (`Progress`, `print_progress`); `max_memory_allocated()` and
its siblings count the solvers' own device memory.
"""

from __future__ import annotations

# torch (optional) is imported before the extension. Loaded first, _core (libcudart.so.13 from the CUDA
# toolkit, libgomp, libstdc++) made the later `import torch` (2.11+cu130) crash in its operator registry on
# the H200 machine, with or without _torch_calls; torch first, then _core, loads cleanly there. The likely
# cause: torch then shares the toolkit's libcudart instead of its own. tests/python/test_package_api.py
# imports the package in a fresh interpreter.
try:
    import torch as _torch  # noqa: F401
except ImportError:
    pass

from . import _core
from ._core import (CudaError, Error, InvalidArgument, OutOfMemory, StopOptimization, Unsupported, cuda_available,
                    empty_cache)
from ._labels import LabelCost
from ._progress import Progress, print_progress
from ._memory import max_memory_allocated, memory_allocated, memory_reserved, reset_peak_memory_stats
from ._functional import (HessianVectorProduct, JointHessianVectorProduct, PotentialVjp, SinkhornResult, Solver,
                          apply_plan, barycentric_map, sinkhorn)
from ._optimize import (AdamState, HybridResult, HybridState, LambdaSample, LanczosResult, OptimizeResult, adam,
                        hybrid, lanczos, newton, trust_region)
from ._samples_loss import SamplesLoss

__version__ = "0.1.0"
__core_version__ = _core.version()

__all__ = [
    "AdamState",
    "CudaError",
    "Error",
    "HessianVectorProduct",
    "HybridResult",
    "HybridState",
    "InvalidArgument",
    "JointHessianVectorProduct",
    "LabelCost",
    "LambdaSample",
    "LanczosResult",
    "OptimizeResult",
    "OutOfMemory",
    "PotentialVjp",
    "Progress",
    "SamplesLoss",
    "SinkhornResult",
    "Solver",
    "StopOptimization",
    "Unsupported",
    "adam",
    "apply_plan",
    "barycentric_map",
    "cuda_available",
    "empty_cache",
    "hybrid",
    "lanczos",
    "max_memory_allocated",
    "memory_allocated",
    "memory_reserved",
    "newton",
    "print_progress",
    "reset_peak_memory_stats",
    "sinkhorn",
    "trust_region",
]
