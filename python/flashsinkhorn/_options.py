"""Keyword arguments → flashsinkhorn._core.Options (options.hpp), with errors that name the argument."""

from __future__ import annotations

from . import _core

_COSTS = {"sqeuclidean": _core.CostKind.squared_euclidean, "squared_euclidean": _core.CostKind.squared_euclidean,
          "cosine": _core.CostKind.cosine}
_SOLVERS = {"alternating": _core.SolverKind.alternating, "symmetric": _core.SolverKind.symmetric}
_PRECISIONS = {"fp32": _core.Precision.fp32, "fp64": _core.Precision.fp64, "tf32": _core.Precision.tf32,
               "bf16": _core.Precision.bf16}


def _pick(table: dict, value: str, name: str):
    try:
        return table[value]
    except (KeyError, TypeError):
        raise _core.InvalidArgument(f"{name} must be one of {sorted(table)}, got {value!r}") from None


def make_options(*, cost: str = "sqeuclidean", solver: str = "alternating", scaling: float | None = None,
                 diameter: float | None = None,
                 iters: int = 1000, tol: float = 1e-4, check_every: int = 10, relaxation: float | str = 1.0,
                 reach: float | None = None,
                 reach_x: float | None = None, reach_y: float | None = None, debias: bool = False,
                 precision: str = "fp32", device: str = "auto", threads: int = 0,
                 normalize_weights: bool = True, input_cuda_index: int | None = None) -> "_core.Options":
    """`reach` sets both sides; `reach_x` / `reach_y` override one side. `diameter`: the ε schedule
    starts at diameter² (None: the diagonal of the joint bounding box). `device`: 'auto', 'cpu',
    'cuda' or 'cuda:k'; with 'auto' and CUDA tensors, the tensors' GPU is the one preferred."""
    o = _core.Options()
    o.cost = _pick(_COSTS, cost, "cost")
    o.solver = _pick(_SOLVERS, solver, "solver")
    o.precision = _pick(_PRECISIONS, precision, "precision")
    o.scaling = None if scaling is None else float(scaling)
    o.diameter = None if diameter is None else float(diameter)
    o.max_iterations = int(iters)
    o.tolerance = float(tol)
    o.check_every = int(check_every)
    if isinstance(relaxation, str):
        if relaxation != "auto":
            raise _core.InvalidArgument(f"relaxation must be a number in (0, 2) or 'auto', got {relaxation!r}")
        o.relaxation, o.adaptive_relaxation = _core.Options.auto_relaxation_start, True
    else:
        o.relaxation = float(relaxation)
    side_x = reach if reach_x is None else reach_x
    side_y = reach if reach_y is None else reach_y
    o.reach_x = None if side_x is None else float(side_x)
    o.reach_y = None if side_y is None else float(side_y)
    o.debias = bool(debias)
    o.normalize_weights = bool(normalize_weights)
    o.cpu_threads = int(threads)
    o.primal_terms = False  # SinkhornResult computes them when first asked for (PrimalTerms)
    if not isinstance(device, str):
        device = str(device)  # torch.device
    if device == "auto":
        o.device = _core.DeviceKind.automatic
        if input_cuda_index is not None:
            o.cuda_device = input_cuda_index
    elif device == "cpu":
        o.device = _core.DeviceKind.cpu
    elif device == "cuda" or device.startswith("cuda:"):
        o.device = _core.DeviceKind.cuda
        index = device.partition(":")[2]
        if index:
            if not index.isdigit():
                raise _core.InvalidArgument(f"device must be 'auto', 'cpu', 'cuda' or 'cuda:<k>', got {device!r}")
            o.cuda_device = int(index)
        elif input_cuda_index is not None:
            o.cuda_device = input_cuda_index
    else:
        raise _core.InvalidArgument(f"device must be 'auto', 'cpu', 'cuda' or 'cuda:<k>', got {device!r}")
    return o


_OPTION_NAMES = ("cost", "solver", "scaling", "diameter", "iters", "tol", "check_every", "relaxation", "reach",
                 "reach_x", "reach_y", "debias", "precision", "device", "threads", "normalize_weights", "input_cuda_index")


_OPTIONS: dict = {}  # argument tuple → Options, at most _OPTIONS_KEPT entries
_OPTIONS_KEPT = 64


def options_for(cost, solver, scaling, diameter, iters, tol, check_every, relaxation, reach, reach_x, reach_y, debias,
                precision, device, threads, normalize_weights, input_cuda_index) -> "_core.Options":
    """make_options(...) with every argument given positionally (in _OPTION_NAMES order), built once
    per distinct argument tuple and reused: the call path hashes one tuple instead of building
    options. The core copies the options into each solver, so sharing one Options object between
    calls is safe; callers must not mutate it. Unhashable arguments (a list) skip the cache."""
    key = (cost, solver, scaling, diameter, iters, tol, check_every, relaxation, reach, reach_x, reach_y, debias, precision,
           device, threads, normalize_weights, input_cuda_index)
    try:
        options = _OPTIONS.get(key)
    except TypeError:  # an unhashable argument: build it, do not cache
        return make_options(**dict(zip(_OPTION_NAMES, key)))
    if options is None:
        options = make_options(**dict(zip(_OPTION_NAMES, key)))  # raises for bad arguments: nothing is cached then
        if len(_OPTIONS) >= _OPTIONS_KEPT:
            _OPTIONS.clear()
        _OPTIONS[key] = options
    return options
