"""OTT-JAX peers, on the authors' protocol (flash_sinkhorn/bench/bench_forward.py): `ott-dense`
(PointCloud, the cost matrix materialised) and `ott-online` (PointCloud(batch_size=256): costs
recomputed in blocks), cost ‖x − y‖² (PointCloud's default), jit-compiled solve.

forward           Sinkhorn(threshold=-1, min_iterations=max_iterations=iters) (OTT counts one
                  iteration as one f and one g update)
forward_gradient  jax.value_and_grad of reg_ot_cost w.r.t. x (OTT's default implicit differentiation)
hvp               jax.jvp of that gradient (forward-over-reverse) along A
converge          Sinkhorn(threshold=tol, max_iterations=max_iters) with OTT's own test (L1 norm of
                  the marginal error, `norm_error=1`), ε scheduled by epsilon_scheduler.Epsilon
                  (init diam²/ε, decay `scaling`)
Timing: wall clock after block_until_ready (JAX has no event API). Memory: the device's
memory_stats()['peak_bytes_in_use'] (XLA's allocator; preallocation off, see run_device.sh).
Potentials: P_ij = exp((f_i + g_j − C_ij)/ε) ⇒ ours f − ε log a, g − ε log b. fp32 runs use
jax_default_matmul_precision='highest', tf32 runs 'tensorfloat32'.
"""

from __future__ import annotations

import os

import numpy as np

from protocol import Case, Unsupported, hvp_direction, load_data, time_wall

BATCH = 256


def patch_jax_for_ott() -> list[str]:
    """OTT-JAX 0.6's batched (online) kernels call jax.interpreters.batching.is_vmappable, which newer
    jax removed from the public module (AttributeError); it still lives in jax._src. Restored at run
    time (nothing in the installed packages is edited); the rows say so in `runtime_patches`."""
    import jax.interpreters.batching as public

    try:
        public.is_vmappable
        return []
    except AttributeError:
        from jax._src.interpreters import batching as private

        public.is_vmappable = getattr(private, "is_vmappable", lambda value: False)
        return ["jax.interpreters.batching.is_vmappable = jax._src.interpreters.batching.is_vmappable"
                if hasattr(private, "is_vmappable") else "jax.interpreters.batching.is_vmappable = (lambda v: False)"]


def run(case: Case, variant: str) -> dict:
    import jax

    if case.precision == "fp64":
        jax.config.update("jax_enable_x64", True)
    if case.precision == "bf16":
        raise Unsupported("OTT-JAX has no bf16 mode in this suite")
    jax.config.update("jax_default_matmul_precision", "tensorfloat32" if case.precision == "tf32" else "highest")
    import jax.numpy as jnp
    import ott
    from ott.geometry import pointcloud
    from ott.problems.linear import linear_problem
    from ott.solvers.linear import sinkhorn

    platform = "gpu" if case.device.startswith("cuda") else "cpu"
    device = jax.devices(platform)[0]
    host = load_data(case, "float64" if case.precision == "fp64" else "float32")
    dt = jnp.float64 if case.precision == "fp64" else jnp.float32
    x, y, a, b = (jax.device_put(jnp.asarray(v, dtype=dt), device) for v in host)
    batch = BATCH if variant == "ott-online" else None
    patches = patch_jax_for_ott() if variant == "ott-online" and os.environ.get("SUITE_OTT_PATCH", "1") != "0" else []
    record = {"version": ott.__version__, "jax": jax.__version__, "runtime_patches": patches,
              "peer_config": ("PointCloud(batch_size=%d)" % BATCH) if batch else "PointCloud (dense)"}

    def geometry(xs, epsilon):
        return pointcloud.PointCloud(xs, y, epsilon=epsilon, batch_size=batch)

    if case.op == "converge":
        from ott.geometry import epsilon_scheduler

        diameter2 = float(jnp.sum((jnp.maximum(x.max(0), y.max(0)) - jnp.minimum(x.min(0), y.min(0))) ** 2))
        epsilon = epsilon_scheduler.Epsilon(target=case.eps, init=diameter2 / case.eps, decay=case.scaling)
        solver = sinkhorn.Sinkhorn(threshold=case.tol, max_iterations=case.max_iters, norm_error=1,
                                   inner_iterations=10)
        record["peer_config"] += f", Epsilon(init=diam²/eps, decay={case.scaling}), threshold {case.tol}"
        record["own_criterion"] = "L1 marginal error (norm_error=1) every 10 iterations"
    else:
        epsilon = case.eps
        solver = sinkhorn.Sinkhorn(threshold=-1.0, max_iterations=case.iters, min_iterations=case.iters)

    def solve(xs):
        return solver(linear_problem.LinearProblem(geometry(xs, epsilon), a=a, b=b))

    stats = lambda: device.memory_stats() or {}  # noqa: E731

    def finish(timing):
        record.update(timing)
        peak = stats().get("peak_bytes_in_use")
        if peak is not None:
            record["peak_device_bytes"] = int(peak)
            record["peak_device_bytes_source"] = "jax device memory_stats()['peak_bytes_in_use'] (whole process)"

    if case.op in ("forward", "converge"):
        jitted = jax.jit(solve)
        timing, out = time_wall(lambda: jitted(x), case, sync=lambda o: jax.block_until_ready(o))
        finish(timing)
        if case.op == "forward":
            record["ms_per_iteration"] = timing["ms"] / case.iters
        else:
            record["iterations"] = int(out.n_iters)
            record["converged"] = bool(out.converged)
        f = np.asarray(out.f, np.float64) - case.eps * np.log(host[2])
        g = np.asarray(out.g, np.float64) - case.eps * np.log(host[3])
        return record, (host, f, g)

    value_and_grad = jax.jit(jax.value_and_grad(lambda xs: solve(xs).reg_ot_cost))
    if case.op == "forward_gradient":
        timing, (value, grad) = time_wall(lambda: value_and_grad(x), case, sync=lambda o: jax.block_until_ready(o))
        finish(timing)
        record["value_reported"] = float(value)
        record["gradient_norm"] = float(jnp.linalg.norm(grad))
        record["gradient_method"] = "OTT's default (implicit differentiation)"
        return record, None
    if case.op == "hvp":
        direction = jax.device_put(jnp.asarray(hvp_direction(case.n, case.d), dtype=dt), device)
        grad_fn = jax.grad(lambda xs: solve(xs).reg_ot_cost)
        hvp = jax.jit(lambda xs, v: jax.jvp(grad_fn, (xs,), (v,))[1])
        timing, hv = time_wall(lambda: hvp(x, direction), case, sync=lambda o: jax.block_until_ready(o))
        finish(timing)
        record["hvp_norm"] = float(jnp.linalg.norm(hv))
        record["hvp_method"] = "jax.jvp of jax.grad (forward over reverse, implicit differentiation)"
        return record, None
    raise Unsupported(case.op)
