"""Gradient flow of the MNIST features towards Fashion-MNIST: X_{k+1} = X_k − η·n·∇_X OTDD(X_k, Y).

OTDD is S_ε with the cost ½(‖x − y‖² + W_k[l, l']) (otdd.py). At each step W_k is held fixed inside
the gradient, then recomputed from the moved MNIST features (their class means and covariances;
the Fashion classes do not move); the labels stay fixed. The gradient of the debiased value with
respect to x_i is a_i·(x_i − T(x_i)) − (the self term's), a_i = 1/n, T the barycentric map: the
step η·n·∇ is therefore scale-free — η = 1 would move each point onto its current transport target,
η = 0.25 (the default) a quarter of the way, so the particles visibly become Fashion images within
10–20 steps.

Writes to --out-dir: particles.png (selected MNIST particles as 28×28 images, pixel = feature·0.3081
+ 0.1307 clipped to [0, 1], one row per particle, one column per shown step), otdd.png (OTDD vs step),
trace.json (values, seconds per step, W at the first and last step) and particles.npz (the selected
particles at every step, from which --plot-only redraws the PNGs, e.g. after a GPU run on a machine
without matplotlib).

    python3 examples/otdd/flow.py --data ../shared/data --n 200 --steps 4 --device cpu --out-dir /tmp/flow
    python3 examples/otdd/flow.py --data ../shared/data --n 10000 --steps 16 --device cuda --out-dir flow_out
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

import idx
from label_distance import ClassGaussians, bures_wasserstein_matrix, class_gaussians
from otdd import FASHION_OFFSET, LabelledPair, load_pair, otdd, progress

CLASSES_PER_SET = 10


@dataclass
class FlowTrace:
    """OTDD at each step (values[k] at X_k), the selected particles' features at each step, W_k."""

    values: list[float] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    label_distances: list[np.ndarray] = field(default_factory=list)
    particles: list[np.ndarray] = field(default_factory=list)
    selected: np.ndarray | None = None
    step_size: float = 0.0


def select_particles(labels: torch.Tensor, per_class: int = 2) -> np.ndarray:
    """The first `per_class` indices of each MNIST class, class by class."""
    labels = labels.cpu().numpy()
    return np.concatenate([np.flatnonzero(labels == c)[:per_class] for c in range(CLASSES_PER_SET)])


def gradient_flow(pair: LabelledPair, steps: int, step_size: float, precision: str | None = None,
                  per_class: int = 2) -> FlowTrace:
    """`steps` steps of X ← X − η·n·∇_X OTDD(X, Y), W recomputed from X before each gradient."""
    fashion = class_gaussians(pair.y, pair.ly - FASHION_OFFSET, CLASSES_PER_SET)
    x = pair.x.detach().clone()
    n = x.shape[0]
    trace = FlowTrace(selected=select_particles(pair.lx, per_class), step_size=step_size)
    for step in range(steps + 1):
        start = time.perf_counter()
        mnist = class_gaussians(x, pair.lx, CLASSES_PER_SET)
        w = bures_wasserstein_matrix(ClassGaussians.concatenate([mnist, fashion]))
        moving = x.requires_grad_(True)
        value = otdd(moving, pair.lx, pair.y, pair.ly, w, precision=precision).cost
        trace.values.append(float(value.detach()))
        trace.label_distances.append(w.cpu().numpy())
        trace.particles.append(x.detach()[torch.as_tensor(trace.selected, device=x.device)].cpu().numpy())
        if step < steps:
            (gradient,) = torch.autograd.grad(value, moving)
            x = (x.detach() - step_size * n * gradient).detach()
        trace.seconds.append(time.perf_counter() - start)
        progress(f"step {step}: OTDD = {trace.values[-1]:.4f} ({trace.seconds[-1]:.2f} s)")
    return trace


def shown_steps(steps: int, columns: int = 9) -> list[int]:
    """Up to `columns` steps from 0 to `steps`, evenly spread, both ends included."""
    return sorted(set(np.linspace(0, steps, min(columns, steps + 1)).round().astype(int).tolist()))


def plot_particles(particles: np.ndarray, path: Path, columns: int = 9) -> None:
    """particles (steps + 1, rows, 784) as a grid of 28×28 images: one row per particle."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = shown_steps(particles.shape[0] - 1, columns)
    rows = particles.shape[1]
    figure, axes = plt.subplots(rows, len(steps), figsize=(0.9 * len(steps), 0.9 * rows), squeeze=False)
    for column, step in enumerate(steps):
        images = idx.pixels(particles[step])
        for row in range(rows):
            axis = axes[row, column]
            axis.imshow(images[row], cmap="gray", vmin=0.0, vmax=1.0)
            axis.set_xticks([])
            axis.set_yticks([])
            if row == 0:
                axis.set_title(f"step {step}", fontsize=7)
    figure.suptitle("MNIST particles along −∇ OTDD towards Fashion-MNIST", fontsize=8)
    figure.tight_layout(rect=(0, 0, 1, 0.98))
    figure.savefig(path, dpi=100)
    plt.close(figure)


def plot_values(values: list[float], step_size: float, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(4.5, 3.2))
    axis.plot(range(len(values)), values, marker="o", markersize=3)
    axis.set_xlabel("step")
    axis.set_ylabel("OTDD (debiased, ε = 0.1)")
    axis.set_title(f"OTDD(MNIST flow, Fashion-MNIST), η = {step_size}", fontsize=9)
    axis.grid(alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def write_outputs(trace: FlowTrace, out_dir: Path, settings: dict) -> dict:
    """trace.json and particles.npz (the selected particles' features at every step, float32)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    cross = [w[:CLASSES_PER_SET, CLASSES_PER_SET:] for w in trace.label_distances]
    record = {"settings": settings, "step_size": trace.step_size, "values": trace.values, "seconds": trace.seconds,
              "selected_particles": trace.selected.tolist(),
              "mean_cross_label_distance": [float(c.mean()) for c in cross],
              "label_distances_first": trace.label_distances[0].tolist(),
              "label_distances_last": trace.label_distances[-1].tolist()}
    (out_dir / "trace.json").write_text(json.dumps(record, indent=2) + "\n")
    np.savez_compressed(out_dir / "particles.npz", particles=np.stack(trace.particles).astype(np.float32))
    return record


def render(out_dir: Path) -> None:
    """particles.png and otdd.png from a run's trace.json and particles.npz (needs matplotlib; a run
    on a machine without it can be rendered elsewhere with --plot-only)."""
    record = json.loads((out_dir / "trace.json").read_text())
    with np.load(out_dir / "particles.npz") as saved:
        particles = saved["particles"]
    plot_particles(particles, out_dir / "particles.png")
    plot_values(record["values"], record["step_size"], out_dir / "otdd.png")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", help="folder with mnist/ and fashion-mnist/")
    parser.add_argument("--n", type=int, default=2000, help="points per set (the first n training images)")
    parser.add_argument("--steps", type=int, default=16)
    parser.add_argument("--step-size", type=float, default=0.25, help="η in X ← X − η·n·∇_X OTDD")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--precision", choices=("fp32", "fp64", "tf32", "bf16"), default=None)
    parser.add_argument("--per-class", type=int, default=2, help="particles shown per MNIST class")
    parser.add_argument("--out-dir", default="otdd_flow")
    parser.add_argument("--plot-only", action="store_true", help="only render the PNGs of an earlier run in --out-dir")
    args = parser.parse_args(argv)
    out_dir = Path(args.out_dir)
    if not args.plot_only:
        if args.data is None:
            parser.error("--data is required (unless --plot-only)")
        pair = load_pair(args.data, args.n, args.device)
        progress(f"flow of {args.n} MNIST points, {args.steps} steps of η = {args.step_size} on {args.device}")
        trace = gradient_flow(pair, args.steps, args.step_size, args.precision, args.per_class)
        settings = {"n": args.n, "steps": args.steps, "device": args.device, "precision": args.precision,
                    "subsample": "the first n images of each training set",
                    "update": "x -= step_size * n * grad_x OTDD (W fixed inside the gradient, recomputed each step)"}
        write_outputs(trace, out_dir, settings)
        progress(f"wrote {out_dir}/trace.json, particles.npz")
    if importlib.util.find_spec("matplotlib") is None:
        progress("matplotlib is not installed: no PNGs; render them elsewhere with --plot-only --out-dir "
                 f"{out_dir}")
        return 0 if not args.plot_only else 1
    render(out_dir)
    progress(f"wrote {out_dir}/particles.png, otdd.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
