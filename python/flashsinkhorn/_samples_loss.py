"""`SamplesLoss`: GeomLoss's `SamplesLoss("sinkhorn", p=2, ...)`, computed by the streaming solver.

  S_ε(α, β) = OT_ε(α, β) − ½OT_ε(α, α) − ½OT_ε(β, β)   (debias=True; OT_ε(α, β) when False)
  OT_ε(α, β) = min_P ⟨P, C⟩ + ε·KL(P ‖ α⊗β) (+ ρ·KL on the marginals with a reach),
  C(x, y) = ½‖x − y‖²,  ε = blur^p = blur²,  ρ = reach^p = reach².

Swapping `from geomloss import SamplesLoss` for `from flashsinkhorn import SamplesLoss` is enough:
same arguments, same ε-schedule (diam² → blur² with ratio `scaling`), same symmetric loop with its
final extrapolation, same values — and the n×m cost matrix is never formed.
"""

from __future__ import annotations

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
    (1, M) — (B, N), (B, M) for a batch — as GeomLoss returns them (F = f_ab, G = g_ab, debias=False).

    A batch is solved problem by problem, each with the ε-schedule of its own diameter; GeomLoss
    uses the diameter of the whole batch, so batched values agree with GeomLoss's only once the
    loops converge (or element by element: loss(x[k], y[k]) is identical).

    By default the loop is GeomLoss's fixed ε-schedule (iters=0, tol=0: no iterations after it).
    Our own options, all keyword-only: cost ('sqeuclidean' or 'cosine'), cost_scale (default ½, the
    p = 2 convention), solver ('symmetric'), precision (None: follows the dtype), iters, tol,
    check_every, device ('auto', 'cpu', 'cuda[:k]'), threads. Gradients are those of the converged
    problem (envelope theorem): equal to GeomLoss's to the accuracy the schedule reaches — raise
    `iters`/lower `tol` for exact first derivatives.

    Not supported (NotImplementedError): loss other than "sinkhorn", p ≠ 2, a custom cost function,
    `diameter`, the "multiscale" backend, cluster labels, potentials=True with debias=True, weights
    that do not sum to 1.

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
        if diameter is not None:
            raise NotImplementedError("diameter= is not supported yet: the ε-schedule starts from the diagonal of the "
                                      "joint bounding box (GeomLoss's choice when diameter=None)")
        if backend not in ("auto", "tensorized", "online"):
            raise NotImplementedError(f"backend {backend!r} is not supported: the streaming solver replaces "
                                      "'tensorized' and 'online' ('auto' is the usual choice)")
        if potentials and debias:
            raise NotImplementedError("potentials=True with debias=True needs the OT(α,α) and OT(β,β) potentials, "
                                      "which the library does not return yet; use debias=False")
        self.loss, self.p, self.blur, self.reach = loss, p, float(blur), reach
        self.scaling, self.debias, self.potentials, self.backend = scaling, bool(debias), bool(potentials), backend
        self.cost = cost
        self.options = dict(cost=cost, cost_scale=cost_scale, solver=solver, scaling=scaling, iters=iters, tol=tol,
                            check_every=check_every, reach=reach, debias=debias, precision=precision, device=device,
                            threads=threads, normalize_weights=False)

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
        results = [self._one(sinkhorn, None if a is None else a[k], x[k], None if b is None else b[k], y[k])
                   for k in range(x.shape[0])]
        if self.potentials:
            return _stack([F for F, _ in results]), _stack([G for _, G in results])
        return _stack(results)

    __call__ = forward if _Base is object else _Base.__call__

    def _one(self, sinkhorn, a, x, b, y):
        if a is not None and len(a.shape) == 2:  # (N, 1) weights
            a = a.reshape(-1)
        if b is not None and len(b.shape) == 2:
            b = b.reshape(-1)
        for name, w in (("a", a), ("b", b)):
            total = None if w is None else float(w.detach().sum() if is_tensor(w) else w.sum())
            if total is not None and abs(total - 1.0) > 1e-6:
                raise NotImplementedError(
                    f"weights {name} sum to {total!r}: SamplesLoss needs probability weights for now "
                    "(the core normalises the weights even with normalize_weights=False, whereas GeomLoss keeps "
                    "the masses)")
        result = sinkhorn(x, y, a, b, eps=self.eps, **self.options)
        if self.potentials:
            return result.f, result.g
        return result.cost


def _stack(values: list) -> Any:
    if values and is_tensor(values[0]):
        return torch.stack(values)
    import numpy as np

    return np.stack([np.asarray(v) for v in values])
