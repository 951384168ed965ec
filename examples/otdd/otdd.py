"""OTDD(D₁, D₂) = S_ε = OT_ε(α, β) − ½OT_ε(α, α) − ½OT_ε(β, β) on labelled points z = (x, l), with
C((x, l), (x', l')) = ½(‖x − x'‖² + W[l, l']), W = W₂² between class Gaussians (label_distance.py).

MNIST against Fashion-MNIST (SPEC §4): features (pixel/255 − 0.1307)/0.3081 for both, labels 0..9
(MNIST) and 10..19 (Fashion), one 20×20 W, ε = 0.1, GeomLoss's ε-schedule (diam² down to ε by the
ratio scaling² = 0.25 per step) with no iterations after it, debiased. The solve is flashsinkhorn's
symmetric loop with the label cost (fs.LabelCost); the value is differentiable in x (flow.py).

Subsample: the first n images of each training set (both sets are stored in a shuffled order; the
first n are a fixed, reproducible sample whose class counts are close to the full set's). W is
computed from the same n points (the distance is between those datasets).

Command line (progress on stderr, results as JSON):
    python3 examples/otdd/otdd.py --data ../shared/data --sizes 2000,10000,20000,60000 \
        --device cuda --reference --geomloss --out results.json
"""

from __future__ import annotations

import argparse
import datetime
import gc
import json
import math
import os
import platform
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

import idx
from label_distance import label_distances

EPS = 0.1
COST_SCALE = 0.5  # ½‖x − x'‖²: GeomLoss's p = 2 convention
SCALING = 0.5
NUM_CLASSES = 20
FASHION_OFFSET = 10  # Fashion-MNIST labels become 10..19
FIXTURE = Path("otdd") / "otdd_W2sq_mnist_fmnist_20x20.tsv"


@dataclass(frozen=True)
class LabelledPair:
    """x (n, 784) MNIST features, lx (n,) in 0..9; y (m, 784) Fashion features, ly (m,) in 10..19."""

    x: torch.Tensor
    lx: torch.Tensor
    y: torch.Tensor
    ly: torch.Tensor

    def head(self, n: int) -> "LabelledPair":
        """The first n points of each set."""
        return LabelledPair(self.x[:n], self.lx[:n], self.y[:n], self.ly[:n])


def load_pair(data_dir: str | Path, n: int, device: str | torch.device = "cpu", dtype: torch.dtype = torch.float32,
              verify: bool = True) -> LabelledPair:
    """The first n training images of MNIST and of Fashion-MNIST as features, on `device`."""
    mnist = idx.load_split(data_dir, "mnist", "train", verify)
    fashion = idx.load_split(data_dir, "fashion-mnist", "train", verify)
    for name, split in (("mnist", mnist), ("fashion-mnist", fashion)):
        if n > split.labels.shape[0]:
            raise ValueError(f"n = {n} exceeds the {split.labels.shape[0]} training images of {name}")
    numpy_dtype = np.float64 if dtype == torch.float64 else np.float32

    def tensors(split: idx.Split, offset: int) -> tuple[torch.Tensor, torch.Tensor]:
        features = torch.from_numpy(idx.features(split.images[:n], numpy_dtype)).to(device=device, dtype=dtype)
        labels = torch.from_numpy(split.labels[:n].astype(np.int64) + offset).to(device)
        return features, labels

    x, lx = tensors(mnist, 0)
    y, ly = tensors(fashion, FASHION_OFFSET)
    return LabelledPair(x, lx, y, ly)


def pair_label_distances(pair: LabelledPair) -> torch.Tensor:
    """The 20×20 W of the pair's 20 classes (float64, on the features' device)."""
    return label_distances(torch.cat([pair.x, pair.y]), torch.cat([pair.lx, pair.ly]), NUM_CLASSES)


def schedule_diameter(x: torch.Tensor, lx: torch.Tensor, y: torch.Tensor, ly: torch.Tensor, w: torch.Tensor) -> float:
    """diam = √(diag² + max W[l, l'] over the labels present), diag the diagonal of the features' joint
    bounding box: the library's default with labels (docs/math.md), so that ½diam² bounds every C_ij.
    Passed explicitly to every implementation (ours, the dense reference, GeomLoss) so that all run
    the same ε list; GeomLoss on the augmented points [x, e_l] would otherwise use their box."""
    lows = torch.minimum(x.detach().min(0).values, y.detach().min(0).values).double()
    highs = torch.maximum(x.detach().max(0).values, y.detach().max(0).values).double()
    present = torch.unique(torch.cat([lx, ly])).to(w.device)
    largest = float(w[present][:, present].max())
    return math.sqrt(float((highs - lows).square().sum()) + largest)


def otdd(x: torch.Tensor, lx: torch.Tensor, y: torch.Tensor, ly: torch.Tensor, w: torch.Tensor, *,
         eps: float = EPS, scaling: float = SCALING, precision: str | None = None, device: str = "auto",
         diameter: float | None = None):
    """S_ε with C = ½(‖x − x'‖² + W[l, l']): fs.sinkhorn's symmetric loop over GeomLoss's ε-schedule
    (iters = 0: nothing after it, as GeomLoss), debiased. Returns the SinkhornResult; `.cost` is a
    0-d tensor, differentiable with respect to x (and y) when they require grad (W held fixed)."""
    import flashsinkhorn as fs

    if diameter is None:
        diameter = schedule_diameter(x, lx, y, ly, w)
    return fs.sinkhorn(x, y, eps=eps, cost_scale=COST_SCALE, solver="symmetric", scaling=scaling, diameter=diameter,
                       iters=0, tol=0.0, debias=True, precision=precision, device=device,
                       labels=fs.LabelCost(lx, ly, w))


def reference_tolerance(precision: str) -> float:
    """Relative tolerance of our value against the dense float64 loop (same ε list, same updates).

    The value is 1-Lipschitz in the cost at convergence (|ΔOT_ε| ≤ ‖ΔC‖_∞ per term, ≤ 2‖ΔC‖_∞ for
    S_ε), and the cost's rounding error is u·s·(‖x‖² + ‖y‖² + 2|x·y|) on centred points of norm² ≈
    d·var ≈ 800 with entries C ≈ 500–1,500 here — a few u relative, times the LSE's own rounding.
    fp64: u = 1.1e-16 → 1e-9 leaves 10⁵ of margin for the ~70 half-steps. fp32 (3xTF32 or FFMA,
    u = 6e-8) → 2e-5. tf32 operands (u = 4.9e-4): the errors of the d = 784 products are random and
    partly cancel in the averages — 2e-3. bf16 (u = 3.9e-3): 2e-2."""
    return {"fp64": 1e-9, "fp32": 2e-5, "tf32": 2e-3, "bf16": 2e-2}[precision]


# ----------------------------------------------------------------------------- command line
def progress(message: str) -> None:
    print(f"[otdd {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def timed(function, device: torch.device):
    """(result, seconds) with the device synchronised before and after."""
    from gpu_memory import synchronize

    synchronize(device)
    start = time.perf_counter()
    result = function()
    synchronize(device)
    return result, time.perf_counter() - start


def run_ours(pair: LabelledPair, w: torch.Tensor, diameter: float, precision: str | None, device: torch.device) -> dict:
    from gpu_memory import MeasuredRegion

    with MeasuredRegion(device) as region:
        first, first_seconds = timed(lambda: otdd(pair.x, pair.lx, pair.y, pair.ly, w, precision=precision,
                                                  diameter=diameter), device)
        # The result keeps its solver (and that solver's device buffers) alive: released before the
        # warm call, so that the peak is one solve's, as a user's loop over steps would see it.
        ours = {"value": float(first.cost), "first_call_seconds": first_seconds, "iterations": first.iterations,
                "marginal_error": first.marginal_error, "solver_device": first.device}
        del first
        gc.collect()
        warm, warm_seconds = timed(lambda: otdd(pair.x, pair.lx, pair.y, pair.ly, w, precision=precision,
                                                diameter=diameter), device)
        ours.update(warm_value=float(warm.cost), warm_seconds=warm_seconds)
        del warm
    return {**ours, "memory": region.record()}


def run_reference(pair: LabelledPair, w: torch.Tensor, diameter: float, ours: float, precision: str) -> dict:
    from dense_otdd import dense_otdd

    value, seconds = timed(lambda: dense_otdd(pair.x.cpu().double().numpy(), pair.lx.cpu().numpy(),
                                              pair.y.cpu().double().numpy(), pair.ly.cpu().numpy(),
                                              w.cpu().numpy(), eps=EPS, cost_scale=COST_SCALE, scaling=SCALING,
                                              diameter=diameter), torch.device("cpu"))
    relative = abs(ours - value) / abs(value)
    tolerance = reference_tolerance(precision)
    return {"value": value, "seconds": seconds, "abs_diff": abs(ours - value), "rel_diff": relative,
            "precision_compared": precision, "rel_tolerance": tolerance, "within_tolerance": relative <= tolerance}


def run_geomloss(pair: LabelledPair, w: torch.Tensor, diameter: float, device: torch.device,
                 memory_limit_gb: float | None) -> dict:
    from geomloss_baseline import geomloss_otdd, is_out_of_memory
    from gpu_memory import MeasuredRegion

    limited = device.type == "cuda" and memory_limit_gb is not None
    if limited:  # torch's cap wants a device index ("cuda" alone is refused)
        index = device.index if device.index is not None else torch.cuda.current_device()
        total = torch.cuda.get_device_properties(index).total_memory
        torch.cuda.set_per_process_memory_fraction(min(1.0, memory_limit_gb * 2**30 / total), index)
    record: dict = {"backend": "tensorized", "memory_limit_gb": memory_limit_gb if limited else None}
    region = MeasuredRegion(device)
    try:
        with region:
            value, seconds = timed(lambda: float(geomloss_otdd(pair.x, pair.lx, pair.y, pair.ly, w, eps=EPS,
                                                               scaling=SCALING, diameter=diameter)), device)
        record.update(status="ok", value=value, seconds=seconds, memory=region.record())
    except ImportError as error:
        record.update(status="not_installed", message=str(error))
    except Exception as error:  # noqa: BLE001  (a failing baseline is a result, not the end of the run)
        status = "out_of_memory" if is_out_of_memory(error) else "error"
        # with the peaks reached before the failure
        record.update(status=status, message=f"{type(error).__name__}: {str(error)[:600]}", memory=region.record())
    finally:
        gc.collect()
        if device.type == "cuda":
            torch.cuda.empty_cache()
            if limited:
                torch.cuda.set_per_process_memory_fraction(1.0, index)
    return record


def fixture_check(data_dir: Path, w: torch.Tensor) -> dict | None:
    path = data_dir / FIXTURE
    if not path.exists():
        return None
    fixture = np.loadtxt(path)
    computed = w.cpu().numpy()
    return {"fixture": str(path), "max_abs_diff": float(np.abs(computed - fixture).max()),
            "max_rel_diff": float(np.abs(computed - fixture).max() / np.abs(fixture).max())}


def environment(device: torch.device) -> dict:
    import flashsinkhorn as fs

    repo = Path(__file__).resolve().parents[2]
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True,
                                timeout=10).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        commit = None
    commit = commit or os.environ.get("FS_COMMIT")  # a copy without .git: the device command names its commit
    versions = {"python": platform.python_version(), "torch": torch.__version__, "numpy": np.__version__,
                "flashsinkhorn": getattr(fs, "__version__", None), "cuda_runtime": torch.version.cuda}
    try:
        import geomloss
        versions["geomloss"] = geomloss.__version__
    except ImportError:
        versions["geomloss"] = None
    machine = {"host": platform.node(), "platform": platform.platform(), "cpu_count": os.cpu_count(),
               "device": str(device)}
    if device.type == "cuda":
        properties = torch.cuda.get_device_properties(device)
        machine.update(gpu=properties.name, gpu_memory_bytes=properties.total_memory)
    return {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"), "git_commit": commit,
            "versions": versions, "machine": machine}


def run_size(pair: LabelledPair, args: argparse.Namespace, device: torch.device) -> dict:
    n = pair.x.shape[0]
    (w, seconds) = timed(lambda: pair_label_distances(pair), device)
    diameter = schedule_diameter(pair.x, pair.lx, pair.y, pair.ly, w)
    record: dict = {"n": n, "m": pair.y.shape[0], "d": pair.x.shape[1], "label_distance_seconds": seconds,
                    "diameter": diameter, "w_max": float(w.max())}
    if n == 60000:
        record["w_vs_fixture"] = fixture_check(Path(args.data), w)
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()
    progress(f"n = {n}: W in {seconds:.2f} s, diameter {diameter:.1f}; solving")
    ours = record["flashsinkhorn"] = run_ours(pair, w, diameter, args.precision, device)
    progress(f"n = {n}: OTDD = {ours['value']:.6f} (first call {ours['first_call_seconds']:.3f} s, "
             f"warm {ours['warm_seconds']:.3f} s)")
    if args.reference and n <= args.reference_max:
        progress(f"n = {n}: dense float64 reference")
        precision = args.precision or ("fp32" if pair.x.dtype == torch.float32 else "fp64")
        ref = record["reference"] = run_reference(pair, w, diameter, ours["value"], precision)
        progress(f"n = {n}: reference {ref['value']:.6f}, relative difference {ref['rel_diff']:.2e} "
                 f"(tolerance {ref['rel_tolerance']:.0e})")
    if args.geomloss:
        progress(f"n = {n}: GeomLoss tensorized")
        geo = record["geomloss"] = run_geomloss(pair, w, diameter, device, args.geomloss_memory_gb)
        progress(f"n = {n}: GeomLoss {geo['status']}" + (f", {geo['value']:.6f} in {geo['seconds']:.3f} s"
                                                        if geo["status"] == "ok" else ""))
    return record


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", required=True, help="folder with mnist/ and fashion-mnist/ (and MD5SUMS)")
    parser.add_argument("--sizes", default="2000,10000,20000,60000", help="comma-separated n (= m)")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--precision", choices=("fp32", "fp64", "tf32", "bf16"), default=None,
                        help="flashsinkhorn's arithmetic (default: that of the float32 inputs, fp32)")
    parser.add_argument("--float64", action="store_true", help="float64 features (default float32)")
    parser.add_argument("--reference", action="store_true", help="check against the dense float64 loop")
    parser.add_argument("--reference-max", type=int, default=2000, help="largest n for --reference")
    parser.add_argument("--geomloss", action="store_true", help="run GeomLoss tensorized at every size")
    parser.add_argument("--geomloss-memory-gb", type=float, default=None,
                        help="cap torch's memory for the GeomLoss runs (emulate a smaller GPU)")
    parser.add_argument("--no-verify", action="store_true", help="skip the MD5 check of the data files")
    parser.add_argument("--out", default=None, help="JSON file for the results (default: stdout only)")
    args = parser.parse_args(argv)

    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    device = torch.device(args.device)
    dtype = torch.float64 if args.float64 else torch.float32
    progress(f"loading the first {max(sizes)} training images of each set from {args.data}")
    full = load_pair(args.data, max(sizes), device, dtype, verify=not args.no_verify)
    report = environment(device)
    report["settings"] = {"eps": EPS, "cost_scale": COST_SCALE, "scaling": SCALING, "debias": True,
                          "solver": "symmetric", "iters_after_schedule": 0, "dtype": str(dtype),
                          "precision": args.precision, "subsample": "the first n images of each training set",
                          "labels": "MNIST 0..9, Fashion-MNIST 10..19", "w": "from the same n points"}
    report["results"] = []
    for n in sizes:
        report["results"].append(run_size(full.head(n), args, device))
        if args.out:  # written after every size: a long run that dies keeps what it measured
            Path(args.out).write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
