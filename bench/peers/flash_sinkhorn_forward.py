"""The authors' `flash-sinkhorn` package on the benchmark protocol of gpu_forward_bench.cu.

x, y ~ N(0, I_d), weights U[0,1) + 0.1 normalised, eps = 0.1, 10 fixed alternating iterations
(SamplesLoss(backend="alternating", use_epsilon_scaling=False)), autotuned Triton kernels; CUDA-event
median over repeats after warm-up; peak memory from the PyTorch allocator. One JSON object per line.
With --grad, each timed call is the forward and then torch.autograd.grad of the value with respect
to x (the issue-4 protocol: forward + gradient), recorded as ms_forward_gradient.

    python3 bench/peers/flash_sinkhorn_forward.py [--sizes 10000x64,50000x8] [--precisions tf32,fp32] [--grad]
"""

from __future__ import annotations

import argparse
import json
import sys

import torch


def run(n: int, d: int, precision: str, iters: int, warmup: int, repeats: int, grad: bool = False) -> dict:
    import flash_sinkhorn
    from flash_sinkhorn import SamplesLoss

    device = torch.device("cuda")
    torch.manual_seed(0)
    x = torch.randn(n, d, device=device, dtype=torch.float32)
    y = torch.randn(n, d, device=device, dtype=torch.float32)
    a = torch.rand(n, device=device, dtype=torch.float32) + 0.1
    b = torch.rand(n, device=device, dtype=torch.float32) + 0.1
    a, b = a / a.sum(), b / b.sum()
    if precision == "bf16":
        x, y = x.bfloat16(), y.bfloat16()
    x.requires_grad_(grad)
    loss = SamplesLoss("sinkhorn", backend="alternating", use_epsilon_scaling=False, eps=0.1,
                       n_iters=iters, debias=False, potentials=False, normalize=False,
                       autotune=True, last_extrapolation=False, allow_tf32=(precision != "fp32"))
    record = {"impl": "flash-sinkhorn", "version": flash_sinkhorn.__version__,
              "device": torch.cuda.get_device_name(0), "n": n, "m": n, "d": d,
              "precision": precision, "eps": 0.1, "iterations": iters, "repeats": repeats,
              "bench": "forward_gradient" if grad else "forward"}

    def call():
        value = loss(a, x, b, y)
        if grad:
            (gradient,) = torch.autograd.grad(value, x)
            return value, gradient
        return value, None

    try:
        for _ in range(warmup):
            call()
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats(device)
        times = []
        for _ in range(repeats):
            start = torch.cuda.Event(enable_timing=True)
            stop = torch.cuda.Event(enable_timing=True)
            start.record()
            value, gradient = call()
            stop.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(stop))
        times.sort()
        if grad:
            record["ms_forward_gradient"] = times[len(times) // 2]
            record["ms_min_forward_gradient"] = times[0]
            record["gradient_norm"] = float(gradient.float().norm())
        else:
            record["ms_per_iteration"] = times[len(times) // 2] / iters
            record["ms_min_per_iteration"] = times[0] / iters
        record["peak_bytes"] = torch.cuda.max_memory_allocated(device)
        record["value"] = float(value)
    except Exception as error:  # noqa: BLE001 - recorded, the run goes on
        record["error"] = f"{type(error).__name__}: {error}"[:300]
    return record


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="10000x64,50000x8,50000x64,50000x512,200000x64")
    parser.add_argument("--precisions", default="tf32,fp32")
    parser.add_argument("--iters", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--grad", action="store_true", help="time forward + gradient w.r.t. x")
    args = parser.parse_args()
    for size in args.sizes.split(","):
        n, d = (int(v) for v in size.split("x"))
        for precision in args.precisions.split(","):
            record = run(n, d, precision, args.iters, args.warmup, args.repeats, args.grad)
            print(json.dumps(record), flush=True)
            what = "ms_forward_gradient" if args.grad else "ms_per_iteration"
            print(f"flash-sinkhorn n={n} d={d} {precision}: {record.get(what, record.get('error'))} {what}",
                  file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
