"""The objective of shuffled regression, L(W) = OT_ε(XW, Y), as the callbacks of fs.hybrid / fs.adam.

Chain rule through Z = XW (SPEC §1, "chain rule to parameters"):
  ∇_W L = Xᵀ·∇_Z OT_ε(Z, Y)                  (∇_Z from the solve: the envelope gradient, Solver.gradient_x)
  ∇²_W L·V = Xᵀ·(∇²_Z OT_ε(Z, Y)·(XV))        (the streamed implicit Hessian-vector product, Solver.hvp)
θ = vec(W) row-major (d_x·d_y float64 values) is what the optimisers see.

Numerics.
- CPU: float64 tensors, the core's fp64 path.
- CUDA: float32 tensors with precision 'fp32' (3×TF32 on the tensor cores, fp32 exponentials and
  LSE; potentials within ~1e-6 relative of float64, gradients ~3e-6, HVPs ~2e-5: docs/numerics.md).
  tf32 / bf16 are not accurate enough here: their potential error is 2e-4..7e-3 of the cost scale,
  and with blobs 20 units apart the cost scale is ~10³ while ε = 0.05, so the plan's exponents
  would be off by O(1)–O(100). fp64 on the GPU has no MUFU exponential (several times slower).
  Xᵀ·(·) is summed in float64 on the device (n terms).
- Sinkhorn at ε = 0.05 on this data converges slowly (a contraction of ~0.998 per iteration: 1–4·10³
  iterations to an L1 marginal error of 1e-5, measured at n = 500) whatever n is, so every solve is
  bounded by `tol` (default 1e-5) and `iters`; the counts are recorded per evaluation.
- Inexact gradients with a forcing term (`forcing` > 0): the solve behind a gradient evaluation stops
  at the L1 marginal error δ_k = clip(forcing·min_{j<k}‖∇_W L(W_j)‖, tol, tol_max) (tol_max for the
  first), as inexact Newton methods bound their inner solves by the outer residual (Eisenstat–Walker);
  the smallest gradient so far, not the last, keeps δ_k from loosening again: a trust-region trial
  point with a large gradient once loosened the next solve to 1e-3, whose value (3e-5 too low) was
  accepted and then beaten by no later, accurate trial point (trust_radius_too_small, n = 1000). Far from W* the gradient is large and a loose solve serves
  (measured at n = 1000, fp64, ω = 1.8: δ = 1e-3 took 76–208 iterations where 1e-5 took 524–9336, and
  its gradient was within 7e-5…5e-4 relative; the gradient error is ≈ 14·δ in absolute terms there);
  near W* it tightens to `tol`. forcing = 0: every solve to `tol`. Hessian products always use a
  solve to `tol`: an HVP at a loose solve first refines it (warm from its potentials for ≤ 300
  iterations, else cold; the time is the HVP's). Without that, the λ_min checks read noise: at n = 1000 with loose solves every Lanczos
  run near W* found a negative Ritz value (−0.1…−0.0003) and the hybrid never switched.
- Warm start when it helps: a solve starts from the last potentials at the target ε, without a
  schedule, when no point moved by more than `warm_radius`·√ε since that solve (max_i ‖Δz_i‖; √ε is
  the plan's length scale); otherwise it starts cold with ε-scaling from diam² (`scaling`). The
  alternating loop's first half-step is f ← T(g), so only g (on the fixed Y) carries over. Measured
  at n = 500: after an Adam step (Δz ~ 1) a warm start took 6–19·10³ iterations against 1–4·10³
  cold (it starts inside the slow modes); near a second-order solution (tiny steps) it takes
  a few hundred.
- The Solver of the last `cache_size` gradient evaluations is kept, keyed on θ's bytes: the
  optimisers call hvp only at a θ whose gradient they evaluated (docs/optimizers.md), so a Hessian
  product costs its CG solve only (each CG iteration one plan pass, 'sparse' preconditioner by
  default: ~40 passes instead of ~140 with 'diagonal' at n = 500). A miss solves again.

Every evaluation is recorded (kind, θ, value, ‖∇‖, seconds, Sinkhorn or CG iterations) so that the
drivers can plot loss against wall time. The drivers bound a run's wall time with the optimisers' own
`max_seconds` (status 'time_limit', the λ_min trace kept), checked between steps; `budget_seconds` /
`budget_evaluations` here stop a run inside a step by raising BudgetExhausted (a fs.StopOptimization)
from the callback: the optimiser drops the step in flight and returns the last accepted one with
status 'stopped' and its state, so that run.py --resume goes on from there. A solve is capped at the
iterations that fit in the budget's remaining seconds at the last solve's speed, and one stopped by
that cap raises BudgetExhausted: an evaluation cannot overrun the budget by more than one chunk of
the solver's convergence checks, whatever the iteration count it would have needed (a cold solve at
n = 10⁵ in fp32 once took 16,140 iterations, 136 s, and a device call's timeout lost the segment).
"""

from __future__ import annotations

import math
import time
import warnings
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

import flashsinkhorn as fs


class BudgetExhausted(fs.StopOptimization):
    """Raised from a callback once the run's wall-time or evaluation budget is spent: the library's
    optimisers end the run at the last accepted step (status 'stopped')."""


@dataclass
class Evaluation:
    kind: str             # 'gradient', 'value' (a trust-region trial point) or 'hvp'
    start: float          # seconds since the loss was reset
    seconds: float
    value: float          # L(W) (gradient, value) or NaN (hvp)
    gradient_norm: float  # ‖∇_W L‖₂ (gradient) or NaN
    iterations: int       # Sinkhorn iterations (gradient, value) or CG iterations (hvp)
    converged: bool
    theta: list = field(default_factory=list)  # W flattened (gradient evaluations only)
    solve_tol: float = float("nan")  # the L1 marginal error its solve stopped at (gradient evaluations)


class ShuffledRegressionLoss:
    """L(W) = OT_ε(XW, Y) with uniform weights and C_ij = ‖z_i − y_j‖² (cost_scale 1)."""

    def __init__(self, x: np.ndarray, y: np.ndarray, eps: float, *, device: str = "cpu", tol: float = 1e-5,
                 iters: int = 20000, scaling: float = 0.9, warm_start: bool = True, warm_radius: float = 1.0,
                 hvp_tol: float = 1e-6,
                 hvp_iters: int = 1000, preconditioner: str = "sparse", cache_size: int = 2,
                 budget_seconds: float = float("inf"), budget_evaluations: int = 10**9, progress=None,
                 relaxation: float | str = 1.0, precision: str | None = None, forcing: float = 0.0,
                 tol_max: float = 1e-3, refine_iters: int = 300, solve_progress: bool = False) -> None:
        self.device = torch.device(device)
        # fp64 unless told, on CUDA too: at this cost scale (‖z‖² ~ 10³ against ε = 0.05) fp32 on the H200
        # floors the marginal error near 2e-5 and its HVPs are wrong — CG never converges and Lanczos at
        # W* reads λ_max ≈ 1e4 (n = 1000) to 3e6 (n = 10⁴) where fp64 and the CPU's fp32 read 113
        # (results/hessian_check_h200.jsonl)
        self.precision = precision or "fp64"
        self.dtype = torch.float64 if self.precision == "fp64" else torch.float32
        # over-relaxation ω of the solves at ε (fs.sinkhorn's relaxation: a number, or 'auto')
        self.relaxation = relaxation if relaxation == "auto" else float(relaxation)
        self.x64 = torch.as_tensor(np.asarray(x, dtype=np.float64), device=self.device)  # for Xᵀ(·) in float64
        self.x = self.x64.to(self.dtype)
        self.y = torch.as_tensor(np.asarray(y, dtype=np.float64), device=self.device).to(self.dtype).contiguous()
        self.d_x, self.d_y = int(x.shape[1]), int(y.shape[1])
        self.eps, self.tol, self.iters, self.scaling = float(eps), float(tol), int(iters), scaling
        self.solve_progress = bool(solve_progress)  # fs.Solver's progress=True: a line per check of every solve
        self.forcing, self.tol_max = float(forcing), max(float(tol_max), float(tol))
        self.refine_iters = int(refine_iters)  # warm refinement of a loose solve before an HVP, then cold (_refine)
        self.warm_start, self.hvp_tol, self.hvp_iters = bool(warm_start), float(hvp_tol), int(hvp_iters)
        self.warm_shift = float(warm_radius) * float(eps) ** 0.5
        self.preconditioner, self.cache_size = preconditioner, int(cache_size)
        self.budget_seconds, self.budget_evaluations = float(budget_seconds), int(budget_evaluations)
        self.progress = progress
        self.reset()

    def reset(self) -> None:
        """Forget the warm start, the cache and the record; restart the clock and the budget."""
        self._potentials = None  # (z, f, g) of the last solve
        self._restored = None  # (z, f, g) restored from an earlier process (restore_potentials)
        self.warm_solves = 0
        self._solvers: OrderedDict[bytes, Any] = OrderedDict()
        self.record: list[Evaluation] = []
        self._smallest_gradient_norm = None  # for the forcing term
        self._warned_unconverged_hvp = False
        self._seconds_per_iteration = None  # of the last solve: the time cap of the next (_iterations_in_budget)
        self._clock = time.perf_counter()

    def continue_forcing(self, smallest_gradient_norm: float) -> None:
        """Carry the forcing term over from an earlier part of the run (run.py --resume): its next
        solve is as tight as if this loss had seen that gradient norm."""
        self._smallest_gradient_norm = float(smallest_gradient_norm)

    def potentials_at(self, theta: np.ndarray) -> dict | None:
        """The converged solve behind a recent gradient evaluation at θ as host arrays — z = XW (n, d_y),
        the potentials f, g — for a continuation in another process (restore_potentials), whose first
        solve at θ then starts warm. A cold ε-scaled solve there can cost far more than the run's warm
        tracking solves: at n = 10⁵ on the H200, at Adam step 827 of the ω = 'auto' run, it hit the
        20,000-iteration cap (168 s) where the warm ones took 20 iterations. A continuation whose first
        solve was cut passes on the potentials it restored (theirs is the same θ). None if θ's solve is
        neither cached and converged nor restored."""
        cached = self._solvers.get(np.asarray(theta, dtype=np.float64).tobytes())
        z = self._points(theta)
        if cached is not None and cached[2].converged:
            return {name: _host(v) for name, v in (("z", z), ("f", cached[2].f), ("g", cached[2].g))}
        if self._restored is not None and torch.equal(self._restored[0], z):  # no solve here since the restore
            return {name: _host(v) for name, v in zip(("z", "f", "g"), self._restored)}
        return None

    def restore_potentials(self, saved: dict) -> None:
        """Warm-start the next solve from `saved` (potentials_at in an earlier process): it starts from
        them when no point of its z moved by more than the warm radius from saved z (as for any solve)."""
        z = torch.as_tensor(np.asarray(saved["z"]), device=self.device, dtype=self.dtype)
        if z.shape != self.y.shape:
            raise ValueError(f"saved potentials of {tuple(z.shape)} points for a problem of {tuple(self.y.shape)}")
        self._potentials = (z, *(torch.as_tensor(np.asarray(saved[k]), device=self.device) for k in ("f", "g")))
        self._restored = self._potentials  # potentials_at passes them on if no solve at their θ converges

    def solve_tolerance(self) -> float:
        """The L1 marginal error the next gradient evaluation's solve stops at (the forcing term)."""
        if self.forcing <= 0:
            return self.tol
        if self._smallest_gradient_norm is None:
            return self.tol_max
        return min(self.tol_max, max(self.tol, self.forcing * self._smallest_gradient_norm))

    # -- the callbacks ------------------------------------------------------------------------------
    def gradient(self, theta: np.ndarray, tol: float | None = None) -> tuple[float, np.ndarray]:
        """(L(W), ∇_W L) for θ = vec(W), its solve to `tol` (default: the forcing term's)."""
        self._check_budget()
        start = time.perf_counter()
        tol = self.solve_tolerance() if tol is None else tol
        solver, result = self._solve(theta, tol)
        grad_z = solver.gradient_x().to(torch.float64)       # (n, d_y)
        grad_w = (self.x64.T @ grad_z).cpu().numpy().ravel()  # (d_x·d_y,)
        value = float(result.cost)
        seconds = time.perf_counter() - start
        norm = float(np.linalg.norm(grad_w))
        if self._smallest_gradient_norm is None or norm < self._smallest_gradient_norm:
            self._smallest_gradient_norm = norm
        self.record.append(Evaluation("gradient", start - self._clock, seconds, value, norm, int(result.iterations),
                                      bool(result.converged), [float(t) for t in theta], tol))
        if self.progress is not None:
            self.progress(f"  grad #{self.count('gradient'):4d}  L = {value:.6e}  |grad| = {norm:.3e}  "
                          f"sinkhorn {result.iterations:5d} it to {tol:.0e}  {seconds:.3f} s")
        return value, grad_w

    def value(self, theta: np.ndarray) -> float:
        """L(W) at a second-order method's trial point, solved warm from the last solve (the current
        iterate's, or the last rejected trial point's) however far the points moved, then cold
        (_warm_then_cold). Near W* a cold ε-scaled solve to 1e-4 exceeds 20,000 iterations at n = 10⁴
        (H200, results/h200_n10000_fp64_warp_plan/), while the iterate's potentials are a close start.
        If the trial point is accepted, its gradient reuses this solve (the shift is then zero)."""
        self._check_budget()
        start = time.perf_counter()
        tol = self.solve_tolerance()
        _, result, iterations = self._warm_then_cold(theta, tol)
        value = float(result.cost)
        self.record.append(Evaluation("value", start - self._clock, time.perf_counter() - start, value, float("nan"),
                                      iterations, bool(result.converged), [float(t) for t in theta], tol))
        if self.progress is not None:
            self.progress(f"  value #{self.count('value'):3d}  L = {value:.6e}  "
                          f"sinkhorn {iterations:5d} it to {tol:.0e}")
        return value

    def hvp(self, theta: np.ndarray, v: np.ndarray) -> np.ndarray:
        """∇²_W L·V = Xᵀ·(∇²_Z OT_ε·(XV)) for θ = vec(W), v = vec(V)."""
        self._check_budget()
        start = time.perf_counter()
        cached = self._solvers.get(np.asarray(theta, dtype=np.float64).tobytes())
        if cached is None:  # not where a gradient was evaluated recently: solve there first
            solver, _ = self._solve(theta, self.tol)
        elif cached[1] > self.tol:  # a forcing term's loose solve: refine it to tol first
            solver = self._refine(theta, cached[2])
        else:
            solver = cached[0]
        direction = torch.as_tensor(np.asarray(v, dtype=np.float64).reshape(self.d_x, self.d_y), device=self.device)
        product = solver.hvp((self.x64 @ direction).to(self.dtype).contiguous(), tol=self.hvp_tol,
                             iters=self.hvp_iters, preconditioner=self.preconditioner)
        out = (self.x64.T @ product.product.to(torch.float64)).cpu().numpy().ravel()
        self.record.append(Evaluation("hvp", start - self._clock, time.perf_counter() - start, float("nan"),
                                      float("nan"), int(product.cg_iterations), bool(product.converged)))
        if not product.converged and not self._warned_unconverged_hvp:
            self._warned_unconverged_hvp = True
            warnings.warn(f"a Hessian product's CG stopped short of hvp_tol = {self.hvp_tol:g} after "
                          f"{product.cg_iterations} iterations: λ_min checks and second-order steps built on it "
                          f"are unreliable ({self.precision}; fp32 at this cost scale: README, Numerics)",
                          RuntimeWarning, stacklevel=2)
        return out

    def lambda_min(self, theta: np.ndarray, *, max_steps: int = 50, tol: float = 1e-6, seed: int = 0):
        """λ_min, λ_max of ∇²_W L at θ by Lanczos on `hvp`, at a solve to `tol` (not the forcing term's)."""
        self._solve(theta, self.tol)
        return fs.lanczos(lambda v: self.hvp(theta, v), self.d_x * self.d_y, max_steps=max_steps, tol=tol,
                          smallest_only=False, seed=seed)

    def _refine(self, theta: np.ndarray, loose):
        """A Solver at θ converged to `tol`, from the loose solve `loose` there: warm from its potentials
        for at most `refine_iters` iterations, else cold with ε-scaling. (Warm refinements take 10–200
        iterations on the shuffled regression at n = 1000, but now and then an over-relaxed one falls
        back to ω = 1 and takes ~4000; a cold ε-scaled solve takes 200–600.)"""
        return self._warm_then_cold(theta, self.tol, start=loose)[0]

    def _warm_then_cold(self, theta: np.ndarray, tol: float, start=None):
        """(solver, result, Sinkhorn iterations in all) at θ to `tol`: warm from `start` (a result at θ)
        or else from the last potentials, at most `refine_iters` iterations; cold with ε-scaling if that
        does not converge (or there is nothing to start from)."""
        iterations = 0
        if start is not None or self._potentials is not None:
            solver, result = self._solve(theta, tol, start=start, warm=True, iters=min(self.iters, self.refine_iters))
            iterations = int(result.iterations)
            if result.converged:
                return solver, result, iterations
        solver, result = self._solve(theta, tol, cold=True)
        return solver, result, iterations + int(result.iterations)

    # -- helpers ------------------------------------------------------------------------------------
    def _iterations_in_budget(self, wanted: int) -> int:
        """`wanted`, or fewer: what fits in the wall-time budget's remaining seconds at the last
        solve's seconds per iteration (no cap before the first solve, or without a budget)."""
        if math.isinf(self.budget_seconds) or self._seconds_per_iteration is None:
            return wanted
        left = self.budget_seconds - self.elapsed()
        return min(wanted, max(0, int(left / self._seconds_per_iteration)))

    def count(self, kind: str) -> int:
        return sum(1 for e in self.record if e.kind == kind)

    def elapsed(self) -> float:
        return time.perf_counter() - self._clock

    def _check_budget(self) -> None:
        if self.elapsed() > self.budget_seconds or len(self.record) >= self.budget_evaluations:
            raise BudgetExhausted(f"budget spent: {self.elapsed():.1f} s, {len(self.record)} evaluations")

    def _points(self, theta: np.ndarray) -> torch.Tensor:
        """Z = XW (n, d_y) on the device in the solves' dtype, for θ = vec(W)."""
        w = torch.as_tensor(np.asarray(theta, dtype=np.float64).reshape(self.d_x, self.d_y), device=self.device)
        return (self.x64 @ w).to(self.dtype).contiguous()

    def _solve(self, theta: np.ndarray, tol: float, start=None, cold: bool = False, iters: int | None = None,
               warm: bool = False):
        """A Solver at Z = XW converged to the L1 marginal error `tol`: warm from `start` (a result at
        the same θ), else cold with ε-scaling if `cold`, else warm from the last potentials when `warm`
        or when allowed (no point moved by more than warm_shift); at most `iters` iterations (default:
        the loss's)."""
        theta = np.asarray(theta, dtype=np.float64)
        z = self._points(theta)
        if start is not None:
            self._potentials = (z, start.f, start.g)
        warm = start is not None or (not cold and self._potentials is not None and (
            warm or (self.warm_start and float((z - self._potentials[0]).norm(dim=1).max()) <= self.warm_shift)))
        wanted = iters or self.iters
        allowed = self._iterations_in_budget(wanted)
        if allowed < 1:
            raise BudgetExhausted(f"budget spent: {self.elapsed():.1f} s, no Sinkhorn iteration fits in what is left")
        kwargs = dict(eps=self.eps, tol=tol, iters=allowed, precision=self.precision, relaxation=self.relaxation,
                      progress=self.solve_progress or None)
        if warm:
            kwargs.update(initial_f=self._potentials[1], initial_g=self._potentials[2])
        else:
            kwargs.update(scaling=self.scaling)
        solver = fs.Solver(z, self.y, **kwargs)
        started = time.perf_counter()
        result = solver.solve()
        if result.iterations > 0:
            self._seconds_per_iteration = (time.perf_counter() - started) / int(result.iterations)
        if allowed < wanted and not result.converged:
            raise BudgetExhausted(f"budget spent inside a solve: {self.elapsed():.1f} s, stopped at "
                                  f"{result.iterations} of up to {wanted} iterations")
        self._potentials = (z, result.f, result.g)
        self.warm_solves += int(warm)
        self._solvers[theta.tobytes()] = (solver, tol, result)
        while len(self._solvers) > self.cache_size:
            self._solvers.popitem(last=False)
        return solver, result


def _host(value) -> np.ndarray:
    """A torch tensor or array as a NumPy array on the host."""
    return value.detach().cpu().numpy() if isinstance(value, torch.Tensor) else np.asarray(value)
