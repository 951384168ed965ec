"""POT peers: `pot-dense-log` (ot.dist + ot.sinkhorn(method='sinkhorn_log'), the dense n×m cost) and
`pot-lazy` (ot.bregman.empirical_sinkhorn(isLazy=True): cost blocks of `batchSize` rows, built by
ot.dist on the host with NumPy — POT's own design — and copied to the device each half-step).

On CUDA the arrays are torch CUDA tensors (POT's torch backend); on the CPU, NumPy arrays, except for
forward + gradient, whose autograd path needs POT's torch backend: CPU torch tensors there.
Potentials: P_ij = exp(log_u_i + log_v_j − C_ij/ε) ⇒ f = ε(log_u − log a), g = ε(log_v − log b).
POT's own stopping test (converge): the L2 norm of the column-marginal error (sinkhorn_log) or the L1
norm of the row-marginal error checked every 10 iterations (lazy), at stopThr = tol; no ε-scaling.
"""

from __future__ import annotations

import numpy as np

from protocol import Case, Unsupported, load_data, set_torch_tf32, time_torch, time_torch_forward_gradient, time_wall

LAZY_BATCH = 1024


def _arrays(case: Case):
    x, y, a, b = load_data(case, "float64" if case.precision == "fp64" else "float32")
    if case.precision == "bf16":
        raise Unsupported("POT has no bf16 mode")
    cuda = case.device.startswith("cuda")
    if not cuda and case.op != "forward_gradient":
        dt = np.float64 if case.precision == "fp64" else np.float32
        return (x, y, a, b), (x.astype(dt), y.astype(dt), a.astype(dt), b.astype(dt)), False
    import torch

    if cuda:
        set_torch_tf32(case.precision)
    dt = torch.float64 if case.precision == "fp64" else torch.float32
    dev = torch.device(case.device)
    t = lambda v: torch.as_tensor(v, dtype=dt, device=dev)  # noqa: E731
    return (x, y, a, b), (t(x), t(y), t(a), t(b)), True


def _numpy(v):
    return v.detach().cpu().numpy().astype(np.float64) if hasattr(v, "detach") else np.asarray(v, np.float64)


def run(case: Case, variant: str) -> dict:
    import ot

    host, (x, y, a, b), torch_backend = _arrays(case)
    lazy = variant == "pot-lazy"
    iters = case.iters if case.op != "converge" else case.max_iters
    stop = 0.0 if case.op != "converge" else case.tol
    record = {"peer_config": ("empirical_sinkhorn(isLazy=True, batchSize=%d)" % LAZY_BATCH) if lazy
              else "ot.dist + ot.sinkhorn(method='sinkhorn_log')",
              "backend": "torch" if torch_backend else "numpy"}

    if case.op in ("forward", "converge"):
        def call():
            if lazy:
                # returns (log u, log v, log): P_ij = exp(log_u_i + log_v_j − C_ij/ε)
                lu, lv, log = ot.bregman.empirical_sinkhorn(x, y, case.eps, a, b, metric="sqeuclidean",
                                                            numIterMax=iters, stopThr=stop, isLazy=True,
                                                            batchSize=LAZY_BATCH, log=True, warn=False)
                return lu, lv, log
            M = ot.dist(x, y)
            _, log = ot.sinkhorn(a, b, M, case.eps, method="sinkhorn_log", numItermax=iters, stopThr=stop,
                                 log=True, warn=False)
            return log["log_u"], log["log_v"], log
        timing, (lu, lv, log) = (time_torch(call, case) if torch_backend else time_wall(call, case))
        record.update(timing)
        f = case.eps * (_numpy(lu) - np.log(host[2]))
        g = case.eps * (_numpy(lv) - np.log(host[3]))
        if case.op == "converge":
            # sinkhorn_log logs the error every 10 iterations; the lazy loop stores its last index
            record["iterations"] = int(log["niter"]) + 1 if "niter" in log else 10 * len(log.get("err", []))
            record["own_criterion"] = "L1 row-marginal error every 10 iterations" if lazy \
                else "L2 column-marginal error every 10 iterations"
        return record, (host, f, g)

    if case.op == "forward_gradient":
        if not torch_backend:
            raise Unsupported("gradients through POT need its torch backend")  # _arrays gives it tensors
        if lazy:
            raise Unsupported("ot.bregman.empirical_sinkhorn2 with isLazy=True builds the cost blocks with NumPy "
                              "on the host (no autograd path to x)")
        xg = x.clone().requires_grad_(True)

        def value_of(xs):
            return ot.sinkhorn2(a, b, ot.dist(xs, y), case.eps, method="sinkhorn_log", numItermax=iters,
                                stopThr=0.0, warn=False)
        record.update(time_torch_forward_gradient(value_of, xg, case))
        return record, None

    raise Unsupported("POT's sinkhorn2 sets its gradient by the envelope theorem (ot.utils.set_gradients): "
                      "no second derivative, so no HVP")
