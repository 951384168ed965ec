#!/usr/bin/env python3
"""Shuffled linear regression Y = Π*(XW*) + σE by L(W) = OT_ε(XW, Y) (SPEC §4, issue 8).

    python3 examples/shuffled_regression/run.py --n 500 --out-dir out/          # the known case, CPU
    python3 examples/shuffled_regression/run.py --n 100000 --device cuda --out-dir out/

For each n: the data (regression_data), the hybrid run (Adam while λ_min(∇²_W L) ≤ 0, then the trust
region) and Adam alone with the same learning rate, a final λ_min check at each end point, the
comparison (regression_runs.compare), then shuffled_regression_n{n}.json and three PNGs in
--out-dir. Progress on stderr.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

import flashsinkhorn as fs  # noqa: E402

from regression_config import CAPS, HYBRID_ONLY, PER_CALL, differing_settings  # noqa: E402
from regression_data import KNOWN_CASE, make_data  # noqa: E402
from regression_loss import ShuffledRegressionLoss  # noqa: E402
from regression_resume import hybrid_after_adam, resumable  # noqa: E402
from regression_runs import compare, run_adam, run_hybrid  # noqa: E402


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--n", type=int, nargs="+", default=[KNOWN_CASE["n"]], help="number of points (one run each)")
    p.add_argument("--device", default="cpu", help="cpu, cuda or cuda:k")
    p.add_argument("--out-dir", type=Path, required=True)
    p.add_argument("--eps", type=float, default=0.05)
    p.add_argument("--noise", type=float, default=KNOWN_CASE["noise"], help="σ")
    p.add_argument("--seed", type=int, default=KNOWN_CASE["seed"], help="data seed")
    p.add_argument("--init-seed", type=int, default=KNOWN_CASE["init_seed"], help="W0 = W* + scale·N(0,1) seed")
    p.add_argument("--init-scale", type=float, default=1.0, help="scale of W0 − W*; 0: W0 = 0.1·N(0,1) near W = 0")
    p.add_argument("--lr", type=float, default=0.05, help="Adam learning rate (both runs)")
    p.add_argument("--check-every", type=int, default=10, help="Adam steps between λ_min checks")
    p.add_argument("--check-gradient-norm", type=float, default=math.inf,
                   help="the checks' gradient gate: λ_min checks only where ‖∇_W L‖ ≤ this, the first at the first "
                        "step inside it (inf: none). With it, --resume --runs hybrid may continue an Adam-alone run "
                        "that never met the gate: the gated hybrid is that run up to there")
    p.add_argument("--negative-tol", type=float, default=1e-6,
                   help="τ: a λ_min check certifies non-convexity below −τ (the Hessian products' resolution)")
    p.add_argument("--switch-threshold", type=float, default=0.0,
                   help="switch once a converged λ_min − residual exceeds this (≥ −τ; −τ: convex up to τ)")
    p.add_argument("--hybrid-adam-iters", type=int, default=1000, help="cap on the hybrid's Adam phase")
    p.add_argument("--adam-iters", type=int, default=3000, help="cap on Adam alone")
    p.add_argument("--second-order", choices=("trust_region", "newton"), default="trust_region")
    p.add_argument("--radius", type=float, default=1.0, help="initial trust radius")
    p.add_argument("--forcing-max", type=float, default=0.9,
                   help="the second-order method's inner CG stops at ‖Hs + g‖ ≤ η‖g‖, η ≤ this (Eisenstat–Walker)")
    p.add_argument("--warm-trials", action="store_true",
                   help="evaluate second-order trial points by a value solved warm from the iterate (up to "
                        "--refine-iters, then cold) instead of a gradient (warm only within --warm-radius)")
    p.add_argument("--dense-model-dimension", type=int, default=0,
                   help="the hybrid's dense model when d_x·d_y ≤ this: each λ_min check and trust-region "
                        "iterate forms the Hessian by d_x·d_y products (exact λ_min, exact steps, the switch "
                        "check's Hessian reused); 0: Lanczos and Steihaug–Toint CG")
    p.add_argument("--check-at-start", action="store_true",
                   help="the hybrid also checks λ_min at W0 whatever --check-gradient-norm (the starting "
                        "curvature on record); a hybrid so set cannot continue an Adam-alone run")
    p.add_argument("--tol", type=float, default=1e-3, help="stop at ‖∇_W L‖ ≤ tol (both runs)")
    p.add_argument("--rtol", type=float, default=1e-3, help="loss target L_hybrid_final·(1 + rtol)")
    p.add_argument("--sinkhorn-tol", type=float, default=1e-5, help="L1 marginal error of every solve")
    p.add_argument("--sinkhorn-iters", type=int, default=20000)
    p.add_argument("--forcing", type=float, default=0.0,
                   help="inexact gradients: solve to clip(forcing·‖∇L‖_prev, --sinkhorn-tol, --sinkhorn-tol-max); 0: always --sinkhorn-tol")
    p.add_argument("--sinkhorn-tol-max", type=float, default=1e-3, help="the loosest solve with --forcing")
    p.add_argument("--relaxation", type=_relaxation, default=1.0,
                   help="over-relaxation ω of every solve at ε (1.8: ~7× fewer iterations on the known case, CPU fp64; "
                        "'auto': adaptive from 1.8)")
    p.add_argument("--precision", choices=("fp32", "fp64", "tf32", "bf16"), default=None,
                   help="the solves' arithmetic (default fp64; fp32 HVPs converge on CUDA since a8a8538, "
                        "not yet rerun in full here: README, Numerics)")
    p.add_argument("--hvp-tol", type=float, default=1e-6)
    p.add_argument("--no-warm-start", action="store_true")
    p.add_argument("--warm-radius", type=float, default=1.0,
                   help="warm-start a solve when no point moved by more than this·√ε since the last (inf: always)")
    p.add_argument("--refine-iters", type=int, default=300,
                   help="warm iterations allowed when refining a loose solve before an HVP (then cold)")
    p.add_argument("--budget-seconds", type=float, default=math.inf,
                   help="wall-time cap per run: between steps (status time_limit) and inside one (the solve in "
                        "flight is cut, the step dropped: status stopped); either way --resume continues it")
    p.add_argument("--runs", nargs="+", choices=("hybrid", "adam"), default=["hybrid", "adam"],
                   help="which runs (one of them: the other from a separate call, joined by merge.py)")
    p.add_argument("--resume", type=Path, default=None,
                   help="an earlier call's --out-dir: each chosen run it stopped by the budget or an iteration "
                        "cap goes on from where it stopped (same problem and settings; caps and budget may "
                        "change), a finished one is carried over; the JSON holds the joined trace")
    p.add_argument("--no-plots", action="store_true")
    p.add_argument("--quiet", action="store_true", help="no per-evaluation progress lines")
    p.add_argument("--solve-progress", action="store_true",
                   help="also a line per convergence check inside every Sinkhorn solve (fs.sinkhorn's progress=True): "
                        "at n = 10⁶ one solve takes minutes")
    return p.parse_args(argv)


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def run_one(n: int, args: argparse.Namespace, save) -> dict:
    """The data, L(W*), the chosen runs (`save(report)` after each), λ_min at their ends, the comparison."""
    data, w0 = problem(n, args)
    loss = ShuffledRegressionLoss(data.x, data.y, args.eps, device=args.device, tol=args.sinkhorn_tol,
                                  iters=args.sinkhorn_iters, warm_start=not args.no_warm_start,
                                  warm_radius=args.warm_radius, refine_iters=args.refine_iters,
                                  hvp_tol=args.hvp_tol, progress=None if args.quiet else log,
                                  relaxation=args.relaxation, precision=args.precision, forcing=args.forcing,
                                  tol_max=args.sinkhorn_tol_max, budget_seconds=args.budget_seconds,
                                  solve_progress=args.solve_progress)
    # the optimisers' max_seconds, checked between steps; the loss stops a step that would overrun it
    budget = None if math.isinf(args.budget_seconds) else args.budget_seconds
    config = config_of(n, args, data, w0)
    loss.reset()
    value_star, _ = loss.gradient(data.w_star.ravel(), tol=loss.tol)
    log(f"n = {n}: L(W*) = {value_star:.6e}, ‖W0 − W*‖ = {np.linalg.norm(w0 - data.w_star):.3f}")

    report = dict(config=config, loss_at_w_star=value_star, flashsinkhorn_version=fs.__version__,
                  torch_version=torch.__version__)
    earlier = previous_report(args, n, config)
    if earlier is not None:
        report["resumed_from"] = str(args.resume)
    if "hybrid" in args.runs and finished(earlier, "hybrid"):
        log("hybrid: carried over from --resume (it had finished)")
        report["hybrid"] = earlier["hybrid"]
    elif "hybrid" in args.runs:
        log("hybrid (Adam → %s)" % args.second_order + ("" if earlier is None else ", resumed" if "hybrid" in earlier
                                                         else ", continuing the Adam-alone run (gated)"))
        hybrid = run_hybrid(loss, w0, data.w_star, lr=args.lr, adam_iters=args.hybrid_adam_iters,
                            check_every=args.check_every, tol=args.tol,
                            check_gradient_norm=args.check_gradient_norm,
                            second_order=args.second_order, forcing_max=args.forcing_max,
                            radius=args.radius, negative_tol=args.negative_tol,
                            switch_threshold=args.switch_threshold, max_seconds=budget,
                            warm_trials=args.warm_trials, dense_model_dimension=args.dense_model_dimension,
                            check_at_start=args.check_at_start,
                            resume=hybrid_resume(earlier, args),
                            potentials=load_potentials(args, n, "hybrid" if earlier and "hybrid" in earlier else "adam"))
        log(f"  {hybrid['status']}: switch after {hybrid['switch_iteration']} Adam steps, "
            f"L = {min(hybrid['value']):.6e}, {hybrid['wall_seconds']:.1f} s, {len(hybrid['value'])} gradients, "
            f"{hybrid['hvp_count']} HVPs, {hybrid.get('trial_values', 0)} trial values")
        report["hybrid"] = hybrid
        save_potentials(loss, hybrid, args.out_dir / potentials_name("hybrid", n))
        save(report)  # kept if a later run is cut short
    if "adam" in args.runs and finished(earlier, "adam"):
        log("Adam alone: carried over from --resume (it had finished)")
        report["adam"] = earlier["adam"]
    elif "adam" in args.runs:
        log("Adam alone" + (", resumed" if earlier and "adam" in earlier else ""))
        adam = run_adam(loss, w0, data.w_star, lr=args.lr, iters=args.adam_iters, tol=args.tol, max_seconds=budget,
                        resume=earlier.get("adam") if earlier else None, potentials=load_potentials(args, n, "adam"))
        log(f"  {adam['status']}: L = {min(adam['value']):.6e}, {adam['wall_seconds']:.1f} s, "
            f"{len(adam['value'])} gradients")
        report["adam"] = adam
        save_potentials(loss, adam, args.out_dir / potentials_name("adam", n))
        save(report)

    report["final_lambda"] = {}
    for name in ("hybrid", "adam"):
        theta = report.get(name, {}).get("final_theta")
        if theta is None or resumable(report[name]):  # a segment cut by its budget: the last one measures
            continue
        loss.reset()
        r = loss.lambda_min(np.asarray(theta), max_steps=loss.d_x * loss.d_y, tol=1e-6)
        report["final_lambda"][name] = dict(lambda_min=r.lambda_min, lambda_max=r.lambda_max,
                                            residual=r.residual_min, steps=r.steps, converged=r.converged)
        log(f"  λ_min at the end of {name}: {r.lambda_min:.4e} (λ_max {r.lambda_max:.4e})")
    if "hybrid" in report and "adam" in report:
        report["comparison"] = compare(report["hybrid"], report["adam"], rtol=args.rtol, gradient_target=args.tol)
        log_comparison(report["comparison"])
    return report


def _relaxation(text: str) -> float | str:
    return text if text == "auto" else float(text)


def problem(n: int, args: argparse.Namespace):
    """(data, W0): the regression's arrays for n and the starting point --init-scale chooses."""
    data = make_data(n=n, noise=args.noise, seed=args.seed, init_seed=args.init_seed)
    w0 = data.w0 if args.init_scale == 1.0 else (
        data.w_star + args.init_scale * (data.w0 - data.w_star) if args.init_scale > 0
        else 0.1 * np.random.RandomState(args.init_seed).normal(size=data.w_star.shape))
    return data, w0


def config_of(n: int, args: argparse.Namespace, data, w0: np.ndarray) -> dict:
    """The report's config: every option, the problem's shape and start, the device's name."""
    budget = None if math.isinf(args.budget_seconds) else args.budget_seconds
    return dict(vars(args), n=n, out_dir=str(args.out_dir), budget_seconds=budget, d_x=data.x.shape[1],
                d_y=data.y.shape[1], stds=list(KNOWN_CASE["stds"]), device_name=_device_name(args.device),
                w0=w0.tolist(), w_star=data.w_star.tolist())


def previous_report(args: argparse.Namespace, n: int, config: dict) -> dict | None:
    """The --resume directory's report for n, checked to be the same problem and settings (SystemExit
    naming the differences); None without --resume."""
    if args.resume is None:
        return None
    path = args.resume / f"shuffled_regression_n{n}.json"
    if not path.exists():
        sys.exit(f"run.py: --resume {args.resume}: no {path.name} there")
    earlier = json.loads(path.read_text())
    # Continuing Adam alone, the hybrid's own settings may differ (the hybrid runs of that problem join it
    # later through merge.py with whatever check schedule they use).
    # So may they when the hybrid continues an Adam-alone run (hybrid_resume).
    may_differ = PER_CALL | CAPS | (HYBRID_ONLY if "hybrid" not in args.runs or "hybrid" not in earlier else set())
    differ = differing_settings(earlier["config"], config, vars(parse(["--out-dir", "-"])), may_differ)
    if differ:
        sys.exit(f"run.py: --resume {path}: another problem or other settings: " + ", ".join(differ))
    return earlier


def hybrid_resume(earlier: dict | None, args: argparse.Namespace) -> dict | None:
    """What the hybrid continues: the earlier report's hybrid; or, where it has only Adam alone, that
    run as the gated hybrid's first segment (regression_resume.hybrid_after_adam; SystemExit if not)."""
    if earlier is None:
        return None
    if "hybrid" in earlier:
        return earlier["hybrid"]
    try:
        return hybrid_after_adam(earlier["adam"], args.check_gradient_norm, args.check_at_start)
    except (KeyError, ValueError) as why:
        sys.exit(f"run.py: --resume {args.resume}: no hybrid run to continue: {why}")


def potentials_name(run: str, n: int) -> str:
    return f"potentials_{run}_n{n}.npz"


def save_potentials(loss: ShuffledRegressionLoss, trace: dict, path: Path) -> None:
    """The last solve at the run's final θ (z, f, g; ShuffledRegressionLoss.potentials_at) beside the
    report, for a warm continuation (--resume); trace['potentials_saved'] says whether there was one."""
    saved = None if trace.get("final_theta") is None else loss.potentials_at(np.asarray(trace["final_theta"]))
    trace["potentials_saved"] = saved is not None
    if saved is not None:
        partial = path.with_name(path.name + ".tmp")
        with open(partial, "wb") as out:
            np.savez_compressed(out, **saved)
        partial.replace(path)


def load_potentials(args: argparse.Namespace, n: int, run: str) -> dict | None:
    """The potentials the --resume directory's `run` saved (None without --resume or without the file:
    the continuation's first solve is cold)."""
    if args.resume is None or not (args.resume / potentials_name(run, n)).exists():
        return None
    with np.load(args.resume / potentials_name(run, n)) as saved:
        log(f"  warm start from {potentials_name(run, n)}")
        return {k: saved[k] for k in ("z", "f", "g")}


def finished(earlier: dict | None, name: str) -> bool:
    """The earlier report holds this run and it cannot go on (converged, or stopped without a state)."""
    return earlier is not None and name in earlier and not resumable(earlier[name])


def log_comparison(comparison: dict) -> None:
    log(f"  to L ≤ {comparison['loss_target']:.6e}: hybrid {comparison['hybrid']['seconds_to_loss']} s, "
        f"Adam {comparison['adam']['seconds_to_loss']} s")
    if "common" in comparison:
        c = comparison["common"]
        log(f"  to L ≤ {c['loss_target']:.6e} (both reached it): hybrid {c['hybrid_seconds']:.1f} s, "
            f"Adam {c['adam_seconds']:.1f} s, speedup {c['speedup']:.2f}×")


def _device_name(device: str) -> str:
    if device.startswith("cuda") and torch.cuda.is_available():
        return torch.cuda.get_device_name(torch.device(device))
    return "cpu"


def main(argv: list[str] | None = None) -> list[Path]:
    args = parse(argv)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for n in args.n:
        started = time.perf_counter()
        path = args.out_dir / f"shuffled_regression_n{n}.json"
        report = run_one(n, args, save=lambda partial: write_report(path, dict(partial, complete=False)))
        report["seconds"] = time.perf_counter() - started
        write_report(path, dict(report, complete=True))
        written.append(path)
        written += plots(report, args, f"_n{n}")
        log(f"  wrote {', '.join(p.name for p in written)}")
    return written


def write_report(path: Path, report: dict) -> None:
    """The JSON, replaced whole (written beside, then renamed: never half a file)."""
    partial = path.with_suffix(".json.tmp")
    partial.write_text(json.dumps(report, indent=1, default=_json_default))
    partial.replace(path)


def plots(report: dict, args: argparse.Namespace, suffix: str) -> list[Path]:
    if args.no_plots or "comparison" not in report:  # the figures compare the two runs
        return []
    from regression_plots import plot_all
    try:
        return plot_all(report, args.out_dir, suffix)
    except ImportError as missing:  # matplotlib absent: the JSON is the result
        log(f"  no plots ({missing})")
        return []


def _json_default(value):
    if isinstance(value, (np.floating, np.integer)):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"not JSON serialisable: {type(value)}")


if __name__ == "__main__":
    main()
