"""GeomLoss peers, on the authors' protocol (flash_sinkhorn/bench/bench_forward.py):
`geomloss-tensorized` (softmin_tensorized on the dense n×m cost ‖x − y‖²) and `geomloss-online`
(KeOps: softmin_online with lse_genred("SqDist(X,Y)", d)), both through GeomLoss's own
sinkhorn_loop with the full cost, so that ε is ours and the potentials need no rescaling.

forward           eps_list = [ε]·iters, last_extrapolation=False (GeomLoss's loop: one initial
                  softmin pair + `iters` averaged symmetric steps)
forward_gradient  the same with last_extrapolation=True (GeomLoss differentiates that last step),
                  value ⟨a, f⟩ + ⟨b, g⟩, then ∇x by autograd
hvp               double backward through that last step (GeomLoss's HVP)
converge          eps_list = GeomLoss's epsilon_schedule(2, diam, √ε, scaling) ending at ε, with the
                  final extrapolation; GeomLoss has no tolerance test: the marginal error it reaches
                  is recorded, and `reached_tol` says whether it met tol
KeOps compiles its kernel in the warm-up call (first_call_ms). bf16 is not a GeomLoss mode.
"""

from __future__ import annotations

from functools import partial

import numpy as np

from protocol import (Case, Unsupported, hvp_direction, load_data, set_torch_tf32, time_torch,
                      time_torch_forward_gradient)


def _softmin(variant: str, d: int):
    if variant == "geomloss-online":
        from geomloss._legacy.sinkhorn_samples import lse_genred, softmin_online

        return partial(softmin_online, log_conv=lse_genred("SqDist(X,Y)", d)), False
    from geomloss._legacy.sinkhorn_samples import softmin_tensorized

    return softmin_tensorized, True


def _sqdist(x, y):
    return (x * x).sum(-1, keepdim=True) + (y * y).sum(-1, keepdim=True).transpose(-2, -1) \
        - 2.0 * x @ y.transpose(-2, -1)


def run(case: Case, variant: str) -> dict:
    import torch
    import geomloss
    from geomloss._legacy.sinkhorn_divergence import epsilon_schedule, log_weights, max_diameter, sinkhorn_loop

    if case.precision == "bf16":
        raise Unsupported("GeomLoss has no bf16 mode")
    cuda = case.device.startswith("cuda")
    if variant == "geomloss-online" and not cuda:
        raise Unsupported("the KeOps backend is run on CUDA only in this suite")
    if cuda:
        set_torch_tf32(case.precision)
    elif case.threads:
        torch.set_num_threads(case.threads)
    host = load_data(case, "float64" if case.precision == "fp64" else "float32")
    dt = torch.float64 if case.precision == "fp64" else torch.float32
    dev = torch.device(case.device)
    x, y = (torch.as_tensor(v, dtype=dt, device=dev) for v in host[:2])
    a, b = (torch.as_tensor(v, dtype=dt, device=dev) for v in host[2:])
    softmin, dense = _softmin(variant, case.d)
    record = {"version": geomloss.__version__}

    def loop(xs, eps_list, last_extrapolation):
        if dense:
            c_xy = _sqdist(xs.unsqueeze(0), y.unsqueeze(0))
            c_yx = _sqdist(y.unsqueeze(0), xs.unsqueeze(0))
            la, lb = log_weights(a).unsqueeze(0), log_weights(b).unsqueeze(0)
        else:
            c_xy, c_yx = (xs, y.detach()), (y, xs.detach())
            la, lb = log_weights(a), log_weights(b)
        _, _, g_ab, f_ba = sinkhorn_loop(softmin, la, lb, None, None, c_xy, c_yx, eps_list, rho=None,
                                         debias=False, last_extrapolation=last_extrapolation)
        return f_ba.reshape(-1), g_ab.reshape(-1)

    def potentials(f, g):
        return (host, f.detach().double().cpu().numpy(), g.detach().double().cpu().numpy())

    if case.op == "converge":
        eps_list = [float(e) for e in epsilon_schedule(2, float(max_diameter(x, y)), case.eps ** 0.5, case.scaling)]
        record["peer_config"] = f"GeomLoss epsilon_schedule (scaling {case.scaling}, {len(eps_list)} steps), " \
                                "final extrapolation; no tolerance test in GeomLoss"
        record["iterations"] = len(eps_list)
        timing, (f, g) = time_torch(lambda: loop(x, eps_list, True), case)
        record.update(timing)
        return record, potentials(f, g)

    eps_list = [case.eps] * case.iters
    if case.op == "forward":
        record["peer_config"] = f"sinkhorn_loop, eps_list=[eps]*{case.iters}, last_extrapolation=False"
        timing, (f, g) = time_torch(lambda: loop(x, eps_list, False), case)
        record.update(timing)
        record["ms_per_iteration"] = timing["ms"] / case.iters
        return record, potentials(f, g)

    xg = x.detach().clone().requires_grad_(True)
    record["peer_config"] = f"sinkhorn_loop, eps_list=[eps]*{case.iters}, last_extrapolation=True (differentiated)"

    def value_of(xs):
        f, g = loop(xs, eps_list, True)
        return (a * f).sum() + (b * g).sum()

    if case.op == "forward_gradient":
        record.update(time_torch_forward_gradient(value_of, xg, case))
        return record, None
    if case.op == "hvp":
        direction = torch.as_tensor(hvp_direction(case.n, case.d), dtype=dt, device=dev)

        def call():
            (grad,) = torch.autograd.grad(value_of(xg), xg, create_graph=True)
            (hv,) = torch.autograd.grad(grad, xg, grad_outputs=direction)
            return hv
        timing, hv = time_torch(call, case)
        record.update(timing)
        record["hvp_norm"] = float(hv.norm())
        record["hvp_method"] = "double backward through GeomLoss's last extrapolation step"
        return record, None
    raise Unsupported(case.op)
