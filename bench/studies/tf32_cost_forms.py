#!/usr/bin/env python3
"""Why our tf32 marginal floor is twice OTT's and POT's at d = 512 / 1,024 (README, the suite's converge
rows s40c / s40d: the shared float64 evaluator reads 0.17 / 0.25 for ours, 0.088 / 0.124 for theirs) —
NumPy only, no GPU.

Two ways to form C_ij = ‖x_i − y_j‖² from tf32 operands x̃, ỹ (centred points, the suite's protocol):
  ours   ‖x̃_i‖² + ‖ỹ_j‖² − 2 x̃_i·ỹ_j   (norms of the rounded points, SPEC §2: C is the exact squared
                                        distance of x̃ and ỹ — ≥ 0, zero for equal points)
  mixed  ‖x_i‖² + ‖y_j‖² − 2 x̃_i·ỹ_j   (fp32 norms, a tf32 GEMM: what a dense cost through cuBLAS
                                        or a tensor-core kernel with fp32 norms forms)
each with nearest-even rounding (our preparation) and with truncation (a tensor core reading float32
operands nobody rounded). Per coordinate the first form's error is (x − y)(δx − δy), variance 8σ² for
N(0, 1) coordinates against 2σ² for the second's yδx + xδy. The study measures the std of C − C_exact
and the float64 L1 marginal error, under the exact cost, of potentials that float64 Sinkhorn converged
on each rounded cost (alternating, ε = 0.1, weights U[0,1) + 0.1 normalised).

    python3 bench/studies/tf32_cost_forms.py --n 400 --ds 8,512,1024 --out bench/results/tf32_cost_forms_vm.jsonl
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np

from operand_rounding import tf32, tf32_truncated


def lse(a, axis):
    top = a.max(axis=axis, keepdims=True)
    return (top + np.log(np.exp(a - top).sum(axis=axis, keepdims=True))).squeeze(axis)


def sinkhorn(cost, a, b, eps, iterations):
    f, g = np.zeros(len(a)), np.zeros(len(b))
    for _ in range(iterations):
        f = -eps * lse((g[None, :] - cost) / eps + np.log(b)[None, :], 1)
        g = -eps * lse((f[:, None] - cost) / eps + np.log(a)[:, None], 0)
    return f, g


def marginal_error(cost, a, b, f, g, eps):
    """Σ_i |P1 − a| + Σ_j |Pᵀ1 − b| for P = a b exp((f + g − C)/ε)."""
    plan = a[:, None] * b[None, :] * np.exp((f[:, None] + g[None, :] - cost) / eps)
    return float(np.abs(plan.sum(1) - a).sum() + np.abs(plan.sum(0) - b).sum())


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=400)
    parser.add_argument("--ds", default="8,512,1024")
    parser.add_argument("--eps", type=float, default=0.1)
    parser.add_argument("--iterations", type=int, default=500)
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    lines = []
    for d in (int(v) for v in args.ds.split(",")):
        x, y = rng.standard_normal((args.n, d)), rng.standard_normal((args.n, d))
        a, b = (w / w.sum() for w in (rng.random(args.n) + 0.1, rng.random(args.n) + 0.1))
        mean = 0.5 * (a @ x / a.sum() + b @ y / b.sum())
        x, y = (x - mean).astype(np.float32), (y - mean).astype(np.float32)
        x64, y64 = x.astype(np.float64), y.astype(np.float64)
        exact = (x64 ** 2).sum(1)[:, None] + (y64 ** 2).sum(1)[None, :] - 2 * x64 @ y64.T
        for rounding, rnd in (("nearest", tf32), ("truncated", tf32_truncated)):
            xr, yr = rnd(x), rnd(y)
            forms = {"ours": (xr ** 2).sum(1)[:, None] + (yr ** 2).sum(1)[None, :] - 2 * xr @ yr.T,
                     "mixed": (x64 ** 2).sum(1)[:, None] + (y64 ** 2).sum(1)[None, :] - 2 * xr @ yr.T}
            for form, cost in forms.items():
                f, g = sinkhorn(cost, a, b, args.eps, args.iterations)
                line = {"study": "tf32_cost_forms", "n": args.n, "d": d, "eps": args.eps, "rounding": rounding,
                        "form": form, "cost_error_std": float(np.std(cost - exact)),
                        "cost_error_mean": float(np.mean(cost - exact)),
                        "marginal_error_exact_cost": marginal_error(exact, a, b, f, g, args.eps),
                        "marginal_error_own_cost": marginal_error(cost, a, b, f, g, args.eps),
                        "iterations": args.iterations}
                lines.append(line)
                print(f"d = {d:>5} {rounding:>9} {form:>5}: std(C − C_exact) {line['cost_error_std']:.4g}, "
                      f"marginal error under the exact cost {line['marginal_error_exact_cost']:.3g} "
                      f"(own cost {line['marginal_error_own_cost']:.2g})", file=sys.stderr)
    if args.out:
        with open(args.out, "w") as out:
            out.writelines(json.dumps(line) + "\n" for line in lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
