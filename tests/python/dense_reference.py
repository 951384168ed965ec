"""Float64 dense reference for SPEC §1 — the first oracle of the Python suite.

Everything here forms the full n×m cost matrix on purpose: it is the slow, obviously-correct
transcription of the equations the streaming library must reproduce.

Conventions (SPEC §1):
  C_ij = s·‖x_i − y_j‖²,  P_ij = a_i b_j exp((f_i + g_j − C_ij)/ε)
  T_f(g)_i = −ε·LSE_j[(g_j − C_ij)/ε + log b_j]      (softmin on the rows of C)
  T_g(f)_j = −ε·LSE_i[(f_i − C_ij)/ε + log a_i]
  unbalanced: f ← damping·T_f(g), damping = 1/(1 + ε/ρ), ρ = reach²
  value: ⟨a,f⟩ + ⟨b,g⟩; unbalanced: ⟨a,(ρ+ε/2)(1−e^{−f/ρ})⟩ + ⟨b,(ρ+ε/2)(1−e^{−g/ρ})⟩;
  debiased: S = ⟨a, f_ba − f_aa⟩ + ⟨b, g_ab − g_bb⟩ (GeomLoss's sinkhorn_cost).

`precision` emulates the library's reduced-precision modes with a *naive* same-precision
implementation (FlashAttention's test rule: the kernel may have at most ~2× the error of a
same-precision naive implementation):
  fp64  float64 everywhere
  fp32  float32 operands, C = s‖x‖² + s‖y‖² − 2s·x·y in float32, LSE in float32
  tf32  as fp32, operands rounded to 10 explicit mantissa bits before the dot product and the norms
  bf16  as fp32, operands rounded to 7 explicit mantissa bits
Inputs are centred by the joint weighted mean before rounding (SPEC §2), as the library does.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

MANTISSA_BITS = {"fp64": 52, "fp32": 23, "tf32": 10, "bf16": 7}
UNIT_ROUNDOFF = {k: 2.0 ** -(v + 1) for k, v in MANTISSA_BITS.items()}


# ----------------------------------------------------------------------------- helpers
def normalise(w, count):
    """Uniform when w is None, else w / Σw (float64)."""
    if w is None:
        return np.full(count, 1.0 / count)
    w = np.asarray(w, dtype=np.float64)
    return w / w.sum()


def safe_log(w):
    with np.errstate(divide="ignore"):
        return np.log(w)


def round_mantissa(values, bits):
    """Round float64 values to `bits` explicit mantissa bits, nearest-even (TF32: 10, BF16: 7)."""
    values = np.asarray(values, dtype=np.float64)
    if bits >= 52:
        return values.copy()
    mantissa, exponent = np.frexp(values)  # values = mantissa·2^exponent, |mantissa| ∈ [0.5, 1)
    scale = 2.0 ** (bits + 1)
    return np.ldexp(np.round(mantissa * scale) / scale, exponent)


def lse(z, axis):
    """log Σ exp(z) along axis with the −∞ guard of a fully masked row (returns −∞ there)."""
    zmax = np.max(z, axis=axis, keepdims=True)
    zmax_safe = np.where(np.isfinite(zmax), zmax, 0.0)
    with np.errstate(divide="ignore"):
        out = np.log(np.sum(np.exp(z - zmax_safe), axis=axis, keepdims=True)) + zmax_safe
    return np.squeeze(out, axis=axis)


def row_normalise(x):
    x = np.asarray(x, dtype=np.float64)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def prepare_points(x, y, a, b, cost="sqeuclidean", cost_scale=1.0):
    """(x, y, s) as the kernels see them: cosine → row-normalised with s = ½; then centred by
    the joint weighted mean μ = ½(Σ a_i x_i + Σ b_j y_j) (C is translation invariant)."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if cost == "cosine":
        x, y, cost_scale = row_normalise(x), row_normalise(y), 0.5
    mu = 0.5 * (a @ x + b @ y)
    return x - mu, y - mu, float(cost_scale)


def cost_matrix(x, y, s, precision="fp64"):
    """C_ij = s‖x_i − y_j‖² (float64), or its naive low-precision evaluation through the
    norm/dot-product identity, the way the streaming kernels compute it."""
    if precision == "fp64":
        diff = x[:, None, :] - y[None, :, :]
        return s * np.einsum("ijk,ijk->ij", diff, diff)
    bits = MANTISSA_BITS[precision]
    xr = round_mantissa(x, bits).astype(np.float32)
    yr = round_mantissa(y, bits).astype(np.float32)
    s32 = np.float32(s)
    xx = np.einsum("ik,ik->i", xr, xr)
    yy = np.einsum("jk,jk->j", yr, yr)
    return s32 * xx[:, None] + s32 * yy[None, :] - np.float32(2) * s32 * (xr @ yr.T)


def softmin(eps, c, h):
    """−ε·LSE_j[h_j − C_ij/ε] (GeomLoss's softmin; h = log w + g/ε), computed in C's dtype."""
    dt = c.dtype
    return -dt.type(eps) * lse(h.astype(dt)[None, :] - c / dt.type(eps), axis=1)


def damping_of(eps, rho):
    return 1.0 if rho is None else 1.0 / (1.0 + eps / rho)


def epsilon_schedule(diameter, blur, scaling, p=2):
    """GeomLoss's epsilon_schedule, verbatim."""
    return (
        [diameter**p]
        + [np.exp(e) for e in np.arange(p * np.log(diameter), p * np.log(blur), p * np.log(scaling))]
        + [blur**p]
    )


def joint_diameter(x, y):
    """GeomLoss's max_diameter: the diagonal of the joint bounding box."""
    mins = np.minimum(x.min(axis=0), y.min(axis=0))
    maxs = np.maximum(x.max(axis=0), y.max(axis=0))
    return float(np.linalg.norm(maxs - mins))


def side_value(w, pot, eps, rho):
    """⟨w, pot⟩ (balanced side) or ⟨w, (ρ + ε/2)(1 − e^{−pot/ρ})⟩ (unbalanced side)."""
    if rho is None:
        return float(w @ pot)
    return float(w @ ((rho + 0.5 * eps) * (1.0 - np.exp(-pot / rho))))


# ----------------------------------------------------------------------------- results
@dataclass
class DenseResult:
    cost: float
    f: np.ndarray
    g: np.ndarray
    iterations: int
    marginal_error: float
    primal_cost: float
    transport_x: np.ndarray
    eps: float
    eps_list: list = field(default_factory=list)
    extra: dict = field(default_factory=dict)


class DenseProblem:
    """A prepared dense problem: weights, centred points, cost matrices in the working precision."""

    def __init__(self, x, y, a=None, b=None, eps=0.1, cost_scale=1.0, cost="sqeuclidean",
                 precision="fp64", reach=None, reach_x=None, reach_y=None):
        x = np.asarray(x, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
        self.x_in, self.y_in = x, y
        self.a = normalise(a, x.shape[0])
        self.b = normalise(b, y.shape[0])
        self.x, self.y, self.s = prepare_points(x, y, self.a, self.b, cost, cost_scale)
        self.eps = float(eps)
        self.precision = precision
        self.dtype = np.float64 if precision == "fp64" else np.float32
        if reach is not None:
            reach_x = reach_y = reach
        self.rho_x = None if reach_x is None else float(reach_x) ** 2
        self.rho_y = None if reach_y is None else float(reach_y) ** 2
        self.c_xy = cost_matrix(self.x, self.y, self.s, precision)
        self.c_exact = cost_matrix(self.x, self.y, self.s, "fp64")  # for primal cost / plan
        self.log_a = safe_log(self.a).astype(self.dtype)
        self.log_b = safe_log(self.b).astype(self.dtype)
        self._c_xx = self._c_yy = None

    @property
    def c_xx(self):
        if self._c_xx is None:
            self._c_xx = cost_matrix(self.x, self.x, self.s, self.precision)
        return self._c_xx

    @property
    def c_yy(self):
        if self._c_yy is None:
            self._c_yy = cost_matrix(self.y, self.y, self.s, self.precision)
        return self._c_yy

    # half-steps ------------------------------------------------------------------
    def t_f(self, eps, g, c=None, log_w=None):
        """T_f(g): the f-update (rows = X, keys = Y)."""
        c = self.c_xy if c is None else c
        log_w = self.log_b if log_w is None else log_w
        return softmin(eps, c, log_w + g.astype(c.dtype) / c.dtype.type(eps))

    def t_g(self, eps, f, c=None, log_w=None):
        """T_g(f): the g-update (rows = Y, keys = X)."""
        c = self.c_xy.T if c is None else c
        log_w = self.log_a if log_w is None else log_w
        return softmin(eps, c, log_w + f.astype(c.dtype) / c.dtype.type(eps))

    def marginal_error(self, eps, g_prev, g_next):
        """Σ_j b_j |exp((g_prev − g_next)/ε) − 1|: the L1 column-marginal error of the plan
        (f, g_prev) when g_next = damping·T_g(f) (the fixed-point residual if unbalanced)."""
        return float(self.b @ np.abs(np.expm1((g_prev.astype(np.float64) - g_next.astype(np.float64)) / eps)))

    # values -------------------------------------------------------------------------
    def value(self, eps, f, g):
        return side_value(self.a, f.astype(np.float64), eps, self.rho_x) + side_value(
            self.b, g.astype(np.float64), eps, self.rho_y)

    def plan(self, f, g, eps=None):
        """The plan used after a solve (solver.hpp): rows renormalised from g,
        P_ij = m_i·softmax_j((g_j − C_ij)/ε + log b_j), m_i = a_i when the X side is balanced (its
        row constraint is hard, so rows are renormalised — also for reach on Y only), or
        a_i·exp((f_i − T_f(g)_i)/ε) when X has a reach — in float64 on the exact cost."""
        eps = self.eps if eps is None else eps
        g = np.asarray(g, dtype=np.float64)
        f = np.asarray(f, dtype=np.float64)
        score = (g[None, :] - self.c_exact) / eps + safe_log(self.b)[None, :]
        row_lse = lse(score, axis=1)
        soft = np.exp(score - row_lse[:, None])
        if self.rho_x is None:
            mass = self.a
        else:
            t_f = -eps * row_lse
            mass = self.a * np.exp((f - t_f) / eps)
        return mass[:, None] * soft

    def finish(self, f, g, iterations, err, eps_list=(), extra=None, value=None):
        f64 = np.asarray(f, dtype=np.float64)
        g64 = np.asarray(g, dtype=np.float64)
        p = self.plan(f64, g64)
        rows = p.sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            transport = (p @ self.y_in_for_transport()) / rows[:, None]
        return DenseResult(
            cost=self.value(self.eps, f64, g64) if value is None else value,
            f=f64, g=g64, iterations=iterations, marginal_error=err,
            primal_cost=float(np.sum(p * self.c_exact)), transport_x=transport,
            eps=self.eps, eps_list=list(eps_list), extra=extra or {})

    def y_in_for_transport(self):
        """T(x_i) is reported in the coordinates of the input Y (solver.hpp)."""
        return self.y_in

    # solvers --------------------------------------------------------------------------
    def schedule(self, scaling):
        """GeomLoss's ε list (p = 2, blur = √ε) on the prepared (centred) cloud — the diameter is
        translation invariant, and for the cosine cost it is that of the normalised points."""
        return epsilon_schedule(joint_diameter(self.x, self.y), np.sqrt(self.eps), scaling)

    def alternating(self, iters, tol=0.0, check_every=10, scaling=None, f0=None, g0=None):
        """f ← d_x·T_f(g), then g ← d_y·T_g(f), per iteration; ε schedule first if scaling.
        Stops at a check (every `check_every` iterations) when the marginal error ≤ tol > 0."""
        n, m = self.c_xy.shape
        f = np.zeros(n, self.dtype) if f0 is None else np.asarray(f0, self.dtype)
        g = np.zeros(m, self.dtype) if g0 is None else np.asarray(g0, self.dtype)
        eps_list = self.schedule(scaling) if scaling is not None else []
        steps = list(eps_list) + [self.eps] * iters
        err = float("nan")
        done = 0
        for k, e in enumerate(steps):
            f = (damping_of(e, self.rho_x) * self.t_f(e, g)).astype(self.dtype)
            g_next = (damping_of(e, self.rho_y) * self.t_g(e, f)).astype(self.dtype)
            err = self.marginal_error(e, g, g_next)
            g = g_next
            done = k + 1
            after_schedule = done - len(eps_list)
            if tol > 0 and after_schedule > 0 and (after_schedule % check_every == 0) and err <= tol:
                break
        return self.finish(f, g, done, err, eps_list)

    def symmetric_potentials(self, eps_list, c_xy, c_yx, log_a, log_b, rho_x, rho_y):
        """GeomLoss's sinkhorn_loop for one problem: init softmin at eps_list[0], one averaged step
        per ε, final extrapolation at the last ε."""
        e0 = eps_list[0]
        dt = c_xy.dtype
        g = (damping_of(e0, rho_y) * softmin(e0, c_yx, log_a)).astype(dt)
        f = (damping_of(e0, rho_x) * softmin(e0, c_xy, log_b)).astype(dt)
        for e in eps_list:
            ft = damping_of(e, rho_x) * softmin(e, c_xy, log_b + g / dt.type(e))
            gt = damping_of(e, rho_y) * softmin(e, c_yx, log_a + f / dt.type(e))
            f, g = (0.5 * (f + ft)).astype(dt), (0.5 * (g + gt)).astype(dt)
        e = eps_list[-1]
        f, g = (
            (damping_of(e, rho_x) * softmin(e, c_xy, log_b + g / dt.type(e))).astype(dt),
            (damping_of(e, rho_y) * softmin(e, c_yx, log_a + f / dt.type(e))).astype(dt),
        )
        return f, g

    def symmetric(self, iters=0, scaling=None, debias=False):
        """The symmetric (GeomLoss) solver; eps_list = schedule (if scaling) + [ε]·iters."""
        eps_list = (self.schedule(scaling) if scaling is not None else []) + [self.eps] * iters
        if not eps_list:
            raise ValueError("empty ε list: give scaling or iters > 0")
        f_ba, g_ab = self.symmetric_potentials(eps_list, self.c_xy, self.c_xy.T, self.log_a,
                                               self.log_b, self.rho_x, self.rho_y)
        extra = {}
        value = None
        if debias:
            f_aa, _ = self.symmetric_potentials(eps_list, self.c_xx, self.c_xx.T, self.log_a,
                                                self.log_a, self.rho_x, self.rho_x)
            g_bb, _ = self.symmetric_potentials(eps_list, self.c_yy, self.c_yy.T, self.log_b,
                                                self.log_b, self.rho_y, self.rho_y)
            extra = {"f_aa": f_aa.astype(np.float64), "g_bb": g_bb.astype(np.float64)}
            value = self.debiased_value(f_ba, g_ab, f_aa, g_bb)
        # marginal error of the final plan (f, g): rows reference g_ab, next column update
        g_next = damping_of(self.eps, self.rho_y) * self.t_g(self.eps, f_ba)
        err = self.marginal_error(self.eps, g_ab, g_next)
        return self.finish(f_ba, g_ab, len(eps_list), err, eps_list, extra, value)

    def debiased_value(self, f_ba, g_ab, f_aa, g_bb):
        """GeomLoss's sinkhorn_cost with debias=True (balanced or unbalanced per side)."""
        eps = self.eps
        f_ba, g_ab, f_aa, g_bb = (np.asarray(v, dtype=np.float64) for v in (f_ba, g_ab, f_aa, g_bb))

        def side(w, p_self, p_cross, rho):
            if rho is None:
                return float(w @ (p_cross - p_self))
            return float(w @ ((rho + 0.5 * eps) * (np.exp(-p_self / rho) - np.exp(-p_cross / rho))))

        return side(self.a, f_aa, f_ba, self.rho_x) + side(self.b, g_bb, g_ab, self.rho_y)


# ----------------------------------------------------------------------------- shortcuts
def converged_alternating(x, y, a=None, b=None, eps=0.1, cost_scale=1.0, tol=1e-13, max_iters=100000,
                          **kw):
    """Float64 alternating Sinkhorn run until the L1 marginal error ≤ tol (checked every step)."""
    prob = DenseProblem(x, y, a, b, eps=eps, cost_scale=cost_scale, **kw)
    return prob.alternating(max_iters, tol=tol, check_every=1)


def self_transport_value(x, a, eps, cost_scale=1.0, tol=1e-14, max_iters=100000):
    """OT_ε(α, α) = 2⟨a, f⟩ at the symmetric fixed point f = T(f), found by the averaged iteration
    f ← ½(f + T(f)) (its linearisation ½(I − Π) has spectrum in [0, ½] since the Gaussian kernel is
    positive: it converges fast, while alternating Sinkhorn on identical clouds is sublinear)."""
    prob = DenseProblem(x, x, a, a, eps=eps, cost_scale=cost_scale)
    f = np.zeros(prob.c_xy.shape[0])
    for _ in range(max_iters):
        t = prob.t_f(eps, f, c=prob.c_xy, log_w=prob.log_a)
        err = float(prob.a @ np.abs(np.expm1((f - t) / eps)))
        f = 0.5 * (f + t)
        if err <= tol:
            break
    return 2.0 * float(prob.a @ prob.t_f(eps, f, c=prob.c_xy, log_w=prob.log_a))


def debiased_converged(x, y, a=None, b=None, eps=0.1, cost_scale=1.0, tol=1e-13, **kw):
    """S_ε = OT(a,b) − ½OT(a,a) − ½OT(b,b), each solved to convergence (OT(a,b) by alternating
    Sinkhorn, the self terms by the averaged symmetric iteration)."""
    ab = converged_alternating(x, y, a, b, eps, cost_scale, tol, **kw)
    aa = self_transport_value(x, ab_weights(a, len(x)), eps, cost_scale)
    bb = self_transport_value(y, ab_weights(b, len(y)), eps, cost_scale)
    return ab.cost - 0.5 * aa - 0.5 * bb


def ab_weights(w, count):
    return normalise(w, count)


def exact_w2_1d(x, y, a, b, s=1.0):
    """OT_0 for C = s|x − y|² in 1-D: the monotone (quantile) coupling, weights normalised."""
    x = np.asarray(x, dtype=np.float64).ravel()
    y = np.asarray(y, dtype=np.float64).ravel()
    a = normalise(a, x.size)
    b = normalise(b, y.size)
    ix, iy = np.argsort(x), np.argsort(y)
    xs, ys, as_, bs = x[ix], y[iy], a[ix], b[iy]
    ca, cb = np.cumsum(as_), np.cumsum(bs)
    cuts = np.unique(np.concatenate([[0.0], ca, cb]))
    cuts = cuts[cuts <= 1.0]
    total = 0.0
    for lo, hi in zip(cuts[:-1], cuts[1:]):
        mid = 0.5 * (lo + hi)
        i = min(np.searchsorted(ca, mid), x.size - 1)
        j = min(np.searchsorted(cb, mid), y.size - 1)
        total += (hi - lo) * s * (xs[i] - ys[j]) ** 2
    return total
