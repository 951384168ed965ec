"""`flashsinkhorn otdd --data DIR` (issue 8): the OTDD between MNIST and Fashion-MNIST from the CLI.

Reads the gzipped IDX training files in FLASHSINKHORN_DATA (default: <repo>/../shared/data, holding
mnist/ and fashion-mnist/), or a synthetic stand-in in the same format when they are missing
(otdd_data.py). Small --n keeps every CPU run to a second or two. FLASHSINKHORN_OTDD_FULL=1 also checks W
at n = 60,000 against the float64 fixture of the real data (half a minute on two cores).
"""

from __future__ import annotations

import gzip
import json
import math
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

import otdd_data
from conftest import device, run_cli

SMALL_N = 300


@pytest.fixture(scope="module")
def data_dir(otdd_data_dir):
    return otdd_data_dir


def otdd(cli_binary, *args):
    return run_cli(["otdd", *[str(a) for a in args]])


def run_ok(cli_binary, *args) -> dict:
    proc = otdd(cli_binary, *args)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)  # exactly one JSON object on stdout


def copy_data(source: Path, target: Path) -> Path:
    """A private copy of the data directory (symlinks to the real files) that a test may damage."""
    for f in otdd_data.TRAIN_FILES:
        (target / f).parent.mkdir(parents=True, exist_ok=True)
        (target / f).symlink_to(source / f)
    return target


def replace(path: Path, data: bytes) -> None:
    path.unlink()
    path.write_bytes(data)


def expect_bad_input(cli_binary, data: Path, needle: str, *extra):
    proc = otdd(cli_binary, "--data", data, "--n", SMALL_N, "--device", "cpu", "--quiet", *extra)
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert proc.stdout == "", proc.stdout
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("flashsinkhorn: error: "), proc.stderr
    assert needle in lines[0], f"{needle!r} not in {lines[0]!r}"
    return lines[0]


# ----------------------------------------------------------------------------------- numpy oracle
def read_idx(path: Path, n: int):
    raw = gzip.decompress(path.read_bytes())
    if raw[2] == 8 and raw[3] == 3:
        count, rows, cols = (int.from_bytes(raw[4 * k:4 * k + 4], "big") for k in (1, 2, 3))
        return np.frombuffer(raw, np.uint8, offset=16).reshape(count, rows * cols)[:n]
    return np.frombuffer(raw, np.uint8, offset=8)[:n]


def class_samples(features: np.ndarray, labels: np.ndarray, label: int):
    x = features[labels == label]
    return x.mean(0), (x - x.mean(0)) / np.sqrt(len(x) - 1)  # AᵀA = the unbiased covariance


def gaussian_w2_matrix(features: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """W[l, l'] = ‖μ − μ'‖² + tr Σ + tr Σ' − 2 tr (Σ^½ Σ' Σ^½)^½ with Σ = AᵀA, Σ' = BᵀB and
    tr (Σ^½ Σ' Σ^½)^½ = ‖A Bᵀ‖_* (the singular values of the small class-by-class matrix)."""
    stats = [class_samples(features, labels, label) for label in range(20)]
    w = np.zeros((20, 20))
    for i in range(20):
        for j in range(i + 1, 20):
            (mi, ai), (mj, aj) = stats[i], stats[j]
            cross = np.linalg.svd(ai @ aj.T, compute_uv=False).sum()
            w[i, j] = w[j, i] = max(0.0, ((mi - mj) ** 2).sum() + (ai ** 2).sum() + (aj ** 2).sum() - 2 * cross)
    return w


def textbook_w2(features: np.ndarray, labels: np.ndarray, i: int, j: int) -> float:
    """The same with d×d matrix square roots (np.cov, eigh), for a few pairs: slower, and its square roots
    of rounded zero eigenvalues (rank ≤ class size − 1 < 784) add ~√ε_mach noise, hence 1e-6 below."""
    def sqrtm(m):
        w, v = np.linalg.eigh(m)
        return (v * np.sqrt(np.clip(w, 0, None))) @ v.T
    (mi, xi), (mj, xj) = ((x.mean(0), np.cov(x, rowvar=False, ddof=1)) for x in (features[labels == i], features[labels == j]))
    root = sqrtm(xi)
    cross = np.sqrt(np.clip(np.linalg.eigvalsh(root @ xj @ root), 0, None)).sum()
    return ((mi - mj) ** 2).sum() + np.trace(xi) + np.trace(xj) - 2 * cross


# ----------------------------------------------------------------------------------------- tests
def test_prints_one_json_object_with_a_finite_value(cli_binary, data_dir, tmp_path):
    out = run_ok(cli_binary, "--data", data_dir, "--n", SMALL_N, "--device", device(), "--out", tmp_path / "w")
    assert math.isfinite(out["cost"])
    assert out["cost"] > 0  # MNIST and Fashion-MNIST are far apart
    assert (out["n"], out["m"], out["d"], out["labels"]) == (SMALL_N, SMALL_N, 784, 20)
    assert out["eps"] == pytest.approx(0.1) and out["scaling"] == 0.5 and out["debias"] is True
    assert out["solver"] == "symmetric" and out["cost_scale"] == 0.5 and out["subset"] == "first"
    assert out["iterations"] > 0 and math.isfinite(out["marginal_error"])
    for key in ("load_seconds", "label_distance_seconds", "prepare_seconds", "solve_seconds", "seconds"):
        assert out[key] >= 0, key
    assert isinstance(out["device_peak_bytes"], int) and out["host_peak_bytes"] > 0
    if out["device"] == "cpu":
        assert out["device_peak_bytes"] == 0 and out["cuda_used_before_bytes"] is None
    else:
        assert out["cuda_used_after_bytes"] >= out["cuda_used_before_bytes"] > 0
    w = np.load(tmp_path / "w" / "label_distances.npy")
    assert w.shape == (20, 20) and w.dtype == np.float64
    assert np.array_equal(w, w.T) and np.all(np.diag(w) == 0) and np.all(w[~np.eye(20, dtype=bool)] > 0)


def test_label_distances_match_the_gaussian_closed_form(cli_binary, data_dir, tmp_path):
    # W from the first N images of each set, against numpy's float64 textbook formula on the same images.
    out = run_ok(cli_binary, "--data", data_dir, "--n", SMALL_N, "--label-distances-only", "--out", tmp_path)
    assert "cost" not in out
    w = np.load(tmp_path / "label_distances.npy")
    features, labels = [], []
    for name, offset in (("mnist", 0), ("fashion-mnist", 10)):
        pixels = read_idx(data_dir / name / "train-images-idx3-ubyte.gz", SMALL_N)
        features.append((pixels / 255.0 - 0.1307) / 0.3081)
        labels.append(read_idx(data_dir / name / "train-labels-idx1-ubyte.gz", SMALL_N).astype(np.int64) + offset)
    features, labels = np.concatenate(features), np.concatenate(labels)
    expected = gaussian_w2_matrix(features, labels)
    np.testing.assert_allclose(w, expected, rtol=1e-9, atol=1e-9 * expected.max())
    for i, j in ((0, 1), (3, 17), (12, 19)):
        assert w[i, j] == pytest.approx(textbook_w2(features, labels, i, j), rel=1e-6), (i, j)


def test_seeded_subsets_are_reproducible(cli_binary, data_dir):
    args = ["--data", data_dir, "--n", 200, "--seed", 7, "--device", "cpu", "--quiet", "--precision", "fp64"]
    first, again = run_ok(cli_binary, *args), run_ok(cli_binary, *args)
    # The same points: the same value up to the order of the threads' sums (the CPU backend's multi-threaded
    # reductions are not bitwise reproducible under load: 1488.7443762616792 against ...795 was seen).
    assert first["cost"] == pytest.approx(again["cost"], rel=1e-13)
    assert first["subset"] == "random" and first["seed"] == 7
    prefix = run_ok(cli_binary, "--data", data_dir, "--n", 200, "--device", "cpu", "--quiet", "--precision", "fp64")
    assert prefix["cost"] != first["cost"]


def test_more_iterations_after_the_schedule(cli_binary, data_dir):
    base = ["--data", data_dir, "--n", 200, "--device", "cpu", "--quiet"]
    geomloss = run_ok(cli_binary, *base)
    longer = run_ok(cli_binary, *base, "--iters", 20, "--tol", 0)
    assert longer["iterations"] == geomloss["iterations"] + 20
    assert longer["marginal_error"] < geomloss["marginal_error"]
    assert longer["cost"] == pytest.approx(geomloss["cost"], rel=0.05)


def test_missing_data_directory(cli_binary, tmp_path):
    expect_bad_input(cli_binary, tmp_path / "nowhere", "nowhere: no such directory")
    (tmp_path / "mnist").mkdir()
    expect_bad_input(cli_binary, tmp_path, "train-labels-idx1-ubyte.gz: no such file")


def test_truncated_gzip_file(cli_binary, data_dir, tmp_path):
    data = copy_data(data_dir, tmp_path)
    victim = data / "fashion-mnist" / "train-images-idx3-ubyte.gz"
    replace(victim, (data_dir / "fashion-mnist" / "train-images-idx3-ubyte.gz").read_bytes()[:200_000])
    expect_bad_input(cli_binary, data, f"{victim}: truncated gzip file")


def test_wrong_magic_number(cli_binary, data_dir, tmp_path):
    data = copy_data(data_dir, tmp_path)
    victim = data / "mnist" / "train-images-idx3-ubyte.gz"
    replace(victim, (data_dir / "mnist" / "train-labels-idx1-ubyte.gz").read_bytes())  # a labels file
    expect_bad_input(cli_binary, data, f"{victim}: not an IDX images file: magic number 0x00000801, expected 0x00000803")


def test_not_gzip_and_truncated_idx(cli_binary, data_dir, tmp_path):
    data = copy_data(data_dir, tmp_path)
    labels = data / "mnist" / "train-labels-idx1-ubyte.gz"
    raw = gzip.decompress((data_dir / "mnist" / "train-labels-idx1-ubyte.gz").read_bytes())
    replace(labels, raw)
    expect_bad_input(cli_binary, data, f"{labels}: not a gzip file")
    replace(labels, gzip.compress(raw[:-5]))
    count = int.from_bytes(raw[4:8], "big")
    expect_bad_input(cli_binary, data, f"{labels}: truncated IDX data: {count} labels need {count} bytes")
    replace(labels, gzip.compress(raw[:8] + bytes([11]) + raw[9:]))
    expect_bad_input(cli_binary, data, f"{labels}: label 11 at index 0 is outside 0..9")


def test_bad_usage(cli_binary, data_dir):
    images = int.from_bytes(gzip.decompress((data_dir / "mnist" / "train-labels-idx1-ubyte.gz").read_bytes())[4:8], "big")
    too_many = images + 10000
    expect_bad_input(cli_binary, data_dir, f"--n {too_many} is more than the {images} images", "--n", str(too_many))
    expect_bad_input(cli_binary, data_dir, "class", "--n", "5")  # some class has < 2 images
    proc = otdd(cli_binary, "--n", "10")
    assert proc.returncode == 2 and "otdd needs --data DIR" in proc.stderr
    proc = otdd(cli_binary, "--data", data_dir, "--seed", "3")
    assert proc.returncode == 2 and "give --n too" in proc.stderr
    proc = otdd(cli_binary, "--help")
    assert proc.returncode == 0 and "usage: flashsinkhorn otdd --data DIR" in proc.stdout


@pytest.mark.skipif(os.environ.get("FLASHSINKHORN_OTDD_FULL") != "1" or not otdd_data.real_data_available(),
                    reason="set FLASHSINKHORN_OTDD_FULL=1 (and have the real data)")
def test_full_label_distances_match_the_fixture(cli_binary, data_dir, tmp_path):
    run_ok(cli_binary, "--data", data_dir, "--label-distances-only", "--quiet", "--out", tmp_path)
    w = np.load(tmp_path / "label_distances.npy")
    fixture = np.loadtxt(data_dir / "otdd" / "otdd_W2sq_mnist_fmnist_20x20.tsv")
    np.testing.assert_allclose(w, fixture, rtol=1e-6, atol=1e-5)  # the fixture is printed to 6 decimals
