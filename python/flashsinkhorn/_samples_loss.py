"""`SamplesLoss`: GeomLoss's `SamplesLoss("sinkhorn", p=2, ...)`, computed by the streaming solver.

  S_ε(α, β) = OT_ε(α, β) − ½OT_ε(α, α) − ½OT_ε(β, β)   (debias=True; OT_ε(α, β) when False)
  OT_ε(α, β) = min_P ⟨P, C⟩ + ε·KL(P ‖ α⊗β) (+ ρ·KL on the marginals with a reach),
  C(x, y) = ½‖x − y‖²,  ε = blur^p = blur²,  ρ = reach^p = reach².

Swapping `from geomloss import SamplesLoss` for `from flashsinkhorn import SamplesLoss` is enough:
same arguments, same ε-schedule (diam² → blur² with ratio `scaling`, diam = `diameter` or the
diagonal of the joint bounding box — of the whole batch for a batch), same symmetric loop with its
final extrapolation, same values — and the n×m cost matrix is never formed.
"""

from __future__ import annotations

import math
from typing import Any

from ._arrays import Array, is_tensor

try:
    import torch

    _Base: type = torch.nn.Module
except ImportError:  # NumPy-only install: a plain callable with the same interface
    torch = None
    _Base = object

_GEOMLOSS_ONLY = ("hausdorff", "energy", "gaussian", "laplacian")


class SamplesLoss(_Base):
    """S_ε(α, β) = OT_ε(α, β) − ½OT_ε(α, α) − ½OT_ε(β, β),  C = ½‖x − y‖²,  ε = blur², ρ = reach².

    GeomLoss-compatible: `SamplesLoss("sinkhorn", p=2, blur=.05, reach=None, scaling=.5, debias=True,
    potentials=False, backend="auto")`, called as `loss(x, y)` or `loss(a, x, b, y)` with x (N, D),
    y (M, D), weights (N,), (M,) (or (N, 1)) — or a batch: x (B, N, D), a (B, N), ... (solved one
    problem at a time; the values are stacked into a (B,) tensor). Returns the value (a 0-d tensor,
    differentiable w.r.t. x, y, a, b) or, with potentials=True, the potentials (F, G) shaped (1, N),
    (1, M) — (B, N), (B, M) for a batch — as GeomLoss returns them: F = f_ab, G = g_ab with
    debias=False; F = f_ab − f_aa, G = g_ab − g_bb with debias=True (f_aa, g_bb: the potentials of
    OT_ε(α, α), OT_ε(β, β)).

    The ε-schedule starts at diameter² (blur and diameter in the units of x). diameter=None: the
    diagonal of the bounding box of x and y together — for a batch, of all the points of the batch
    (GeomLoss's choice), computed here and handed to every problem, so batched values equal
    GeomLoss's batched ones exactly (loss(x[k], y[k]) alone uses its own diameter, as in GeomLoss).
    With cost='cosine' the box is that of the normalised rows.

    By default the loop is GeomLoss's fixed ε-schedule (iters=0, tol=0: no iterations after it).
    Our own options, all keyword-only: cost ('sqeuclidean' or 'cosine'), cost_scale (default ½, the
    p = 2 convention), solver ('symmetric'), precision (None: follows the dtype), iters, tol,
    check_every, device ('auto', 'cpu', 'cuda[:k]'), threads. verbose=True prints each solve's progress on
    stderr (sinkhorn()'s progress=True). Gradients are those of the converged
    problem (envelope theorem): equal to GeomLoss's to the accuracy the schedule reaches — raise
    `iters`/lower `tol` for exact first derivatives.

    Weights keep their masses (GeomLoss's convention): balanced problems (reach=None) need Σa = Σb
    (flashsinkhorn.InvalidArgument otherwise); with a reach, any positive masses.

    Not supported (NotImplementedError): loss other than "sinkhorn", p ≠ 2, a custom cost function,
    the "multiscale" backend, cluster labels.

    Second derivatives in x, y (double backward: the joint streamed HVP) need no reach. With
    debias=True the product is H_S·(A, B) = H_OT·(A, B) − ½(H_T_α·A, H_T_β·B), T_α(X) = OT_ε(α, α) with
    X on both sides: three plain solves replay the forward's (same schedule, diameter and iterations)
    at the first second derivative, per batch item. Exact second derivatives need a converged solve
    (iters, tol); with the schedule-only default they are those of the schedule's potentials.

    With a reach, gradients differ from GeomLoss's by design: ours are the derivatives of the
    returned value (checked by finite differences); GeomLoss's are (1 + ε/2ρ)/(1 + ε/ρ) times those.
    """

    def __init__(self, loss: str = "sinkhorn", p: int = 2, blur: float = 0.05, reach: float | None = None,
                 diameter: float | None = None, scaling: float = 0.5, truncate: float | None = 5,
                 cost: Any = None, kernel: Any = None, cluster_scale: float | None = None, debias: bool = True,
                 potentials: bool = False, verbose: bool = False, backend: str = "auto", *,
                 cost_scale: float = 0.5, solver: str = "symmetric", precision: str | None = None, iters: int = 0,
                 tol: float = 0.0, check_every: int = 10, device: str = "auto", threads: int = 0) -> None:
        super().__init__()
        if loss != "sinkhorn":
            extra = " (a GeomLoss kernel/Hausdorff loss)" if loss in _GEOMLOSS_ONLY else ""
            raise NotImplementedError(f"flashsinkhorn.SamplesLoss computes loss='sinkhorn' only, got {loss!r}{extra}; "
                                      "use geomloss.SamplesLoss for the others")
        if p != 2:
            raise NotImplementedError(f"flashsinkhorn.SamplesLoss supports p=2 (cost ½‖x − y‖²) only, got p={p!r}")
        if cost is None:
            cost = "sqeuclidean"
        if not isinstance(cost, str) or cost not in ("sqeuclidean", "cosine"):
            raise NotImplementedError(f"cost must be None, 'sqeuclidean' or 'cosine', got {cost!r}; custom cost "
                                      "functions and KeOps formulas are GeomLoss-only")
        if backend not in ("auto", "tensorized", "online"):
            raise NotImplementedError(f"backend {backend!r} is not supported: the streaming solver replaces "
                                      "'tensorized' and 'online' ('auto' is the usual choice)")
        self.loss, self.p, self.blur, self.reach = loss, p, float(blur), reach
        self.diameter = None if diameter is None else float(diameter)
        self.scaling, self.debias, self.potentials, self.backend = scaling, bool(debias), bool(potentials), backend
        self.cost = cost
        self.options = dict(cost=cost, cost_scale=cost_scale, solver=solver, scaling=scaling, diameter=self.diameter,
                            iters=iters, tol=tol,
                            check_every=check_every, reach=reach, debias=debias, precision=precision, device=device,
                            threads=threads, normalize_weights=False)
        if verbose:  # GeomLoss's flag: here a line per convergence check and per solve on stderr
            self.options["progress"] = True

    @property
    def eps(self) -> float:
        """ε = blur^p."""
        return self.blur ** self.p

    def forward(self, *args: Array) -> Any:
        """loss(x, y) or loss(a, x, b, y): the value, or (F, G) with potentials=True."""
        from ._functional import sinkhorn

        if len(args) == 2:
            a, x, b, y = None, args[0], None, args[1]
        elif len(args) == 4:
            a, x, b, y = args
        else:
            raise TypeError("SamplesLoss accepts two (x, y) or four (a, x, b, y) arguments; cluster labels "
                            "(six arguments) are GeomLoss's multiscale backend only")
        batched = getattr(x, "ndim", None) == 3
        if not batched:
            out = self._one(sinkhorn, a, x, b, y)
            # GeomLoss returns non-batched potentials shaped (1, N), (1, M) (a batch of one).
            return (out[0].reshape(1, -1), out[1].reshape(1, -1)) if self.potentials else out
        # GeomLoss's schedule for a batch starts from the diameter of all its points: one for every problem.
        diameter = self.diameter if self.diameter is not None else _batch_diameter(x, y, self.cost == "cosine")
        results = [self._one(sinkhorn, None if a is None else a[k], x[k], None if b is None else b[k], y[k],
                             diameter=diameter)
                   for k in range(x.shape[0])]
        if self.potentials:
            return _stack([F for F, _ in results]), _stack([G for _, G in results])
        return _stack(results)

    __call__ = forward if _Base is object else _Base.__call__

    def _one(self, sinkhorn, a, x, b, y, diameter=None):
        if a is not None and len(a.shape) == 2:  # (N, 1) weights
            a = a.reshape(-1)
        if b is not None and len(b.shape) == 2:
            b = b.reshape(-1)
        options = self.options if diameter is None else dict(self.options, diameter=diameter)
        result = sinkhorn(x, y, a, b, eps=self.eps, **options)
        if self.potentials:
            if self.debias:  # GeomLoss (Feydy's thesis, eq. 3.209): F = f_ab − f_aa, G = g_ab − g_bb
                return result.f - result.f_aa, result.g - result.g_bb
            return result.f, result.g
        return result.cost


def _batch_diameter(x: Array, y: Array, cosine: bool) -> float | None:
    """GeomLoss's max_diameter of a (B, N, D), (B, M, D) batch: ‖max − min‖ per coordinate over the points
    of x and y together, all problems included (in torch for tensors, with GeomLoss's operations). None
    where the core's own choice must stand: empty clouds, zero rows under the cosine cost (the core
    reports those), a zero or non-finite diameter (the core validates it)."""
    if is_tensor(x) or is_tensor(y):
        xs = torch.as_tensor(x).detach()
        ys = torch.as_tensor(y).detach().to(device=xs.device)
        if xs.dtype != ys.dtype:
            ys = ys.to(xs.dtype)
        d = xs.shape[-1]
        xs, ys = xs.reshape(-1, d), ys.reshape(-1, d)
        if xs.shape[0] == 0 or ys.shape[0] == 0 or d == 0:
            return None
        if cosine:
            nx, ny = xs.norm(dim=1, keepdim=True), ys.norm(dim=1, keepdim=True)
            if bool((nx == 0).any()) or bool((ny == 0).any()):
                return None
            xs, ys = xs / nx, ys / ny
        mins = torch.stack((xs.min(dim=0)[0], ys.min(dim=0)[0])).min(dim=0)[0]
        maxs = torch.stack((xs.max(dim=0)[0], ys.max(dim=0)[0])).max(dim=0)[0]
        diameter = (maxs - mins).norm().item()
    else:
        import numpy as np

        xs, ys = np.asarray(x), np.asarray(y)
        d = xs.shape[-1]
        xs, ys = xs.reshape(-1, d), ys.reshape(-1, d)
        if xs.shape[0] == 0 or ys.shape[0] == 0 or d == 0:
            return None
        if cosine:
            nx = np.linalg.norm(xs, axis=1, keepdims=True)
            ny = np.linalg.norm(ys, axis=1, keepdims=True)
            if (nx == 0).any() or (ny == 0).any():
                return None
            xs, ys = xs / nx, ys / ny
        mins = np.minimum(xs.min(axis=0), ys.min(axis=0))
        maxs = np.maximum(xs.max(axis=0), ys.max(axis=0))
        diameter = float(np.linalg.norm(maxs - mins))
    return diameter if diameter > 0 and math.isfinite(diameter) else None


def _stack(values: list) -> Any:
    if values and is_tensor(values[0]):
        return torch.stack(values)
    import numpy as np

    return np.stack([np.asarray(v) for v in values])
