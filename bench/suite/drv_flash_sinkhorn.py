"""The authors' `flash-sinkhorn` (PyTorch + Triton; CUDA only), on its own benchmark protocol.

forward           SamplesLoss(backend='alternating', use_epsilon_scaling=False, eps, n_iters=10,
                  last_extrapolation=False, normalize=False, autotune=True), the value timed (as
                  bench/peers/flash_sinkhorn_forward.py); potentials=True once more for the evaluator
forward_gradient  the same value, then torch.autograd.grad(value, x)
hvp               the same, grad with create_graph=True, then the gradient of ⟨∇x, A⟩ (double backward:
                  the package's own streamed HVP behind autograd)
converge          backend='symmetric' (GeomLoss's loop) on eps_list = GeomLoss's schedule diam² → ε
                  (ratio `scaling` on the blur) followed by up to max_iters steps at ε, threshold = tol
                  on the package's own test (the change of the potentials), checked every 10 steps
Precisions: fp32 (allow_tf32=False), tf32, bf16 (bf16 point clouds). Cost ‖x − y‖² (half_cost=False);
potentials in GeomLoss's convention, as ours.
"""

from __future__ import annotations

import numpy as np

from protocol import Case, Unsupported, hvp_direction, load_data, set_torch_tf32, time_torch


def _schedule(x, y, eps: float, scaling: float):
    from flash_sinkhorn.kernels._common import epsilon_schedule, max_diameter

    return [float(e) for e in epsilon_schedule(float(max_diameter(x, y)), eps ** 0.5, scaling, p=2.0)]


def run(case: Case, variant: str) -> dict:
    import torch
    import flash_sinkhorn
    from flash_sinkhorn import SamplesLoss

    if not case.device.startswith("cuda"):
        raise Unsupported("flash-sinkhorn runs on CUDA tensors only")
    if case.precision == "fp64":
        raise Unsupported("flash-sinkhorn computes in fp32 at most")
    set_torch_tf32(case.precision)
    host = load_data(case)
    dev = torch.device(case.device)
    x, y = (torch.as_tensor(v, device=dev) for v in host[:2])
    a, b = (torch.as_tensor(v, dtype=torch.float32, device=dev) for v in host[2:])
    if case.precision == "bf16":
        x, y = x.bfloat16(), y.bfloat16()
    common = dict(debias=False, normalize=False, autotune=True, allow_tf32=case.precision != "fp32")
    record = {"version": flash_sinkhorn.__version__}

    if case.op == "converge":
        eps_list = _schedule(x.float(), y.float(), case.eps, case.scaling) + [case.eps] * case.max_iters
        loss = SamplesLoss("sinkhorn", backend="symmetric", eps_list=eps_list, threshold=case.tol,
                           inner_iterations=10, potentials=True, last_extrapolation=True, **common)
        record["peer_config"] = (f"symmetric, GeomLoss schedule (scaling {case.scaling}) + up to {case.max_iters} "
                                 f"steps at eps, threshold {case.tol} on the potentials' change")
        record["own_criterion"] = "max change of the potentials between checks"
        timing, (f, g) = time_torch(lambda: loss(a, x, b, y), case)
        record.update(timing)
        return record, (host, f.double().cpu().numpy(), g.double().cpu().numpy())

    loss = SamplesLoss("sinkhorn", backend="alternating", use_epsilon_scaling=False, eps=case.eps,
                       n_iters=case.iters, potentials=False, last_extrapolation=False, **common)
    record["peer_config"] = f"alternating, {case.iters} iterations at eps, autotuned"
    if case.op == "forward":
        timing, value = time_torch(lambda: loss(a, x, b, y), case)
        record.update(timing)
        record["ms_per_iteration"] = timing["ms"] / case.iters
        record["value_reported"] = float(value)
        potentials = SamplesLoss("sinkhorn", backend="alternating", use_epsilon_scaling=False, eps=case.eps,
                                 n_iters=case.iters, potentials=True, last_extrapolation=False, **common)
        f, g = potentials(a, x, b, y)
        return record, (host, f.double().cpu().numpy(), g.double().cpu().numpy())

    xg = x.detach().clone().requires_grad_(True)
    if case.op == "forward_gradient":
        def call():
            value = loss(a, xg, b, y)
            (grad,) = torch.autograd.grad(value, xg)
            return value, grad
        timing, (value, grad) = time_torch(call, case)
        record.update(timing)
        record["value_reported"] = float(value)
        record["gradient_norm"] = float(grad.float().norm())
        return record, None

    if case.op == "hvp":
        direction = torch.as_tensor(hvp_direction(case.n, case.d), device=dev, dtype=xg.dtype)

        def call():
            value = loss(a, xg, b, y)
            (grad,) = torch.autograd.grad(value, xg, create_graph=True)
            (hv,) = torch.autograd.grad(grad, xg, grad_outputs=direction)
            return hv
        timing, hv = time_torch(call, case)
        record.update(timing)
        record["hvp_norm"] = float(hv.float().norm())
        record["hvp_method"] = "torch double backward through SamplesLoss (the package's streamed HVP)"
        return record, None
    raise Unsupported(case.op)
