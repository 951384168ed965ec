"""examples/otdd on the CPU at tiny n: the IDX reader, the label distance, the OTDD value against the
dense float64 loop (and GeomLoss), the gradient flow and the command line — so the example cannot rot.

Oracles: the data's documented checksums and statistics (shared/data/README.md), closed forms of W₂²
between Gaussians, scipy's sqrtm, the float64 fixture W of the full training sets, the repository's
dense float64 loop (tests/python/dense_reference.py, GeomLoss's sinkhorn_loop) and GeomLoss itself.
"""

from __future__ import annotations

import gzip
import json
import math
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("flashsinkhorn._core")

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "otdd"
sys.path.insert(0, str(EXAMPLE))
from otdd_data import DATA  # noqa: E402  (the real data; pipeline tests take otdd_data_dir, real or synthetic)

import idx  # noqa: E402
import label_distance as ld  # noqa: E402
import otdd as otdd_module  # noqa: E402
from dense_otdd import dense_otdd  # noqa: E402

needs_data = pytest.mark.skipif(not (DATA / "mnist").is_dir(), reason=f"no MNIST data under {DATA}")
MNIST_TEST_COUNTS = [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009]  # README "Quick facts"


@pytest.fixture(autouse=True)
def two_threads():
    previous = torch.get_num_threads()
    torch.set_num_threads(min(previous, 2))
    yield
    torch.set_num_threads(previous)


# ----------------------------------------------------------------------------- IDX
def idx_bytes(magic: int, shape: tuple, payload: bytes) -> bytes:
    return magic.to_bytes(4, "big") + b"".join(s.to_bytes(4, "big") for s in shape) + payload


@needs_data
def test_idx_reads_mnist_test_set_with_documented_statistics():
    split = idx.load_split(DATA, "mnist", "t10k")  # MD5-verified
    assert split.images.shape == (10000, 28, 28) and split.images.dtype == np.uint8
    assert np.bincount(split.labels, minlength=10).tolist() == MNIST_TEST_COUNTS
    pixels = split.images.astype(np.float64) / 255
    assert pixels.mean() == pytest.approx(0.1325146058, abs=1e-9)
    assert pixels.std() == pytest.approx(0.3104802479, abs=1e-9)


def test_idx_features_and_pixels_are_inverse():
    images = np.arange(2 * 784, dtype=np.int64).reshape(2, 28, 28) % 256
    feats = idx.features(images.astype(np.uint8), np.float64)
    assert feats.shape == (2, 784)
    assert feats[0, 0] == pytest.approx((0 - 0.1307) / 0.3081)
    np.testing.assert_allclose(idx.pixels(feats) * 255, images, atol=1e-9)


def test_idx_malformed_files_raise_value_error_naming_file(tmp_path):
    good = idx_bytes(0x801, (5,), bytes([1, 2, 3, 4, 5]))
    path = tmp_path / "labels.gz"
    path.write_bytes(gzip.compress(good))
    assert idx.read_idx(path, idx.LABELS_MAGIC).tolist() == [1, 2, 3, 4, 5]

    path.write_bytes(gzip.compress(good[:-2]))  # header says 5 bytes, 3 present
    with pytest.raises(ValueError, match=r"labels\.gz.*needs 5 data bytes, found 3 \(truncated\)"):
        idx.read_idx(path)
    path.write_bytes(gzip.compress(good)[:-12])  # the gzip stream itself cut short
    with pytest.raises(ValueError, match=r"labels\.gz: not a complete gzip stream"):
        idx.read_idx(path)
    path.write_bytes(b"not gzip at all")
    with pytest.raises(ValueError, match=r"labels\.gz: not a complete gzip stream"):
        idx.read_idx(path)
    path.write_bytes(gzip.compress(good))
    with pytest.raises(ValueError, match=r"labels\.gz: magic number 0x00000801, expected 0x00000803"):
        idx.read_idx(path, idx.IMAGES_MAGIC)
    path.write_bytes(gzip.compress(idx_bytes(0x0D01, (1,), b"\0\0\0\0")))  # float32 code
    with pytest.raises(ValueError, match="not an unsigned-byte IDX file"):
        idx.read_idx(path)


@needs_data
def test_idx_checksum_mismatch_and_truncation_of_real_file(tmp_path):
    for name in ("MD5SUMS",):
        shutil.copy(DATA / name, tmp_path / name)
    (tmp_path / "mnist").mkdir()
    for kind in ("images-idx3", "labels-idx1"):
        shutil.copy(DATA / "mnist" / f"t10k-{kind}-ubyte.gz", tmp_path / "mnist")
    idx.verify_md5(tmp_path, "mnist/t10k-labels-idx1-ubyte.gz")
    target = tmp_path / "mnist" / "t10k-labels-idx1-ubyte.gz"
    target.chmod(0o644)
    raw = target.read_bytes()
    target.write_bytes(raw[: len(raw) // 2])
    with pytest.raises(ValueError, match=r"t10k-labels-idx1-ubyte\.gz: MD5 [0-9a-f]{32}, expected ec29112d"):
        idx.load_split(tmp_path, "mnist", "t10k")
    with pytest.raises(ValueError, match=r"t10k-labels-idx1-ubyte\.gz: not a complete gzip stream"):
        idx.load_split(tmp_path, "mnist", "t10k", verify=False)
    with pytest.raises(ValueError, match="no checksum listed for mnist/other.gz"):
        idx.verify_md5(tmp_path, "mnist/other.gz")


# ----------------------------------------------------------------------------- label distance
def gaussians_from_factors(means, factors):
    counts = torch.full((means.shape[0],), 10)
    return ld.ClassGaussians(torch.as_tensor(means, dtype=torch.float64),
                             torch.as_tensor(factors, dtype=torch.float64), counts)


def test_w2_closed_forms_identical_and_commuting_covariances():
    rng = np.random.default_rng(11)
    d = 6
    means = rng.normal(size=(3, d))
    sigma = rng.random((3, d)) + 0.1  # diagonal covariances: they commute
    means[1] = means[0]
    sigma[1] = sigma[0]  # class 1 = class 0
    w = ld.bures_wasserstein_matrix(gaussians_from_factors(means, np.stack([np.diag(np.sqrt(s)) for s in sigma])))
    w = w.numpy()
    assert w[0, 1] == pytest.approx(0.0, abs=1e-12)  # W(Σ, Σ) = 0
    closed = ((means[0] - means[2]) ** 2).sum() + ((np.sqrt(sigma[0]) - np.sqrt(sigma[2])) ** 2).sum()
    assert w[0, 2] == pytest.approx(closed, rel=1e-12)
    np.testing.assert_array_equal(w, w.T)
    assert np.all(np.diag(w) == 0) and np.all(w >= 0)


def test_w2_matches_scipy_sqrtm_on_samples_thin_and_wide_factors():
    """Classes with n_l ≤ d points (centred-sample factors) and n_l > d (Σ^½ by eigh) against the
    textbook formula with scipy.linalg.sqrtm in float64."""
    scipy_linalg = pytest.importorskip("scipy.linalg")
    rng = np.random.default_rng(12)
    d = 7
    counts = [3, 5, 12, 30]  # thin, thin, wide, wide
    points = np.concatenate([rng.normal(size=(c, d)) @ rng.normal(size=(d, d)) + k for k, c in enumerate(counts)])
    labels = np.repeat(np.arange(len(counts)), counts)
    w = ld.label_distances(torch.from_numpy(points), torch.from_numpy(labels), len(counts)).numpy()

    def w2(i, j):
        pi, pj = points[labels == i], points[labels == j]
        si, sj = np.cov(pi, rowvar=False), np.cov(pj, rowvar=False)  # unbiased
        with warnings.catch_warnings():  # the thin classes' Σ are singular: sqrtm warns, and is exact
            warnings.simplefilter("ignore")
            root = scipy_linalg.sqrtm(si).real
            cross = scipy_linalg.sqrtm(root @ sj @ root).real
        return ((pi.mean(0) - pj.mean(0)) ** 2).sum() + np.trace(si + sj - 2 * cross)

    for i in range(len(counts)):
        for j in range(len(counts)):
            assert w[i, j] == pytest.approx(w2(i, j) if i != j else 0.0, rel=1e-7, abs=1e-7), (i, j)


def test_w2_needs_two_points_per_class():
    with pytest.raises(ValueError, match=r"classes \[1\] have fewer than 2 points"):
        ld.class_gaussians(torch.zeros(3, 2), torch.tensor([0, 0, 1]), 2)


@needs_data
def test_w2_reproduces_the_fixture_on_full_training_classes():
    """W between MNIST 1 and Fashion 7 (a cross entry) and Fashion 9 (a within-Fashion entry) from all
    their training images, float64 features, against the fixture (printed to 1e-6 absolute; values
    ~1,000): three 784×784 eigendecompositions, about 6 s on 2 idle cores."""
    fixture = np.loadtxt(DATA / otdd_module.FIXTURE)
    mnist = idx.load_split(DATA, "mnist", verify=False)
    fashion = idx.load_split(DATA, "fashion-mnist", verify=False)
    chosen = [(mnist, 1, 1), (fashion, 7, 17), (fashion, 9, 19)]
    feats = np.concatenate([idx.features(s.images[s.labels == c], np.float64) for s, c, _ in chosen])
    labels = np.concatenate([np.full(int((s.labels == c).sum()), k) for k, (s, c, _) in enumerate(chosen)])
    w = ld.label_distances(torch.from_numpy(feats), torch.from_numpy(labels), 3).numpy()
    rows = [g for _, _, g in chosen]
    np.testing.assert_allclose(w, fixture[np.ix_(rows, rows)], rtol=0, atol=2e-5)


# ----------------------------------------------------------------------------- OTDD value
@pytest.fixture(scope="module")
def tiny_pair(otdd_data_dir):
    return otdd_module.load_pair(otdd_data_dir, 80, "cpu", torch.float64, verify=False)


def dense_value(pair, w, diameter):
    return dense_otdd(pair.x.numpy(), pair.lx.numpy(), pair.y.numpy(), pair.ly.numpy(), w.numpy(),
                      eps=otdd_module.EPS, cost_scale=otdd_module.COST_SCALE, scaling=otdd_module.SCALING,
                      diameter=diameter)


def test_otdd_matches_dense_float64_loop(tiny_pair):
    w = otdd_module.pair_label_distances(tiny_pair)
    assert w.shape == (20, 20)
    diameter = otdd_module.schedule_diameter(tiny_pair.x, tiny_pair.lx, tiny_pair.y, tiny_pair.ly, w)
    want = dense_value(tiny_pair, w, diameter)
    assert 100 < want < 5000  # MNIST vs Fashion at ε = 0.1: ~1,300
    got = float(otdd_module.otdd(tiny_pair.x, tiny_pair.lx, tiny_pair.y, tiny_pair.ly, w).cost)
    assert got == pytest.approx(want, rel=otdd_module.reference_tolerance("fp64"))
    # float32 inputs, fp32 arithmetic: the tolerance of otdd.reference_tolerance (cost rounding u·C)
    x32, y32 = tiny_pair.x.float(), tiny_pair.y.float()
    got32 = float(otdd_module.otdd(x32, tiny_pair.lx, y32, tiny_pair.ly, w, diameter=diameter).cost)
    assert got32 == pytest.approx(want, rel=otdd_module.reference_tolerance("fp32"))
    assert got32 != got  # really float32 arithmetic


def test_otdd_matches_geomloss_on_embedded_labels(tiny_pair):
    pytest.importorskip("geomloss")
    from geomloss_baseline import geomloss_otdd, label_embedding

    w = otdd_module.pair_label_distances(tiny_pair)
    e = label_embedding(w.numpy())
    assert np.abs(((e[:, None] - e[None]) ** 2).sum(-1) - w.numpy()).max() < 1e-8 * w.max().item()
    diameter = otdd_module.schedule_diameter(tiny_pair.x, tiny_pair.lx, tiny_pair.y, tiny_pair.ly, w)
    theirs = float(geomloss_otdd(tiny_pair.x, tiny_pair.lx, tiny_pair.y, tiny_pair.ly, w, eps=otdd_module.EPS,
                                 scaling=otdd_module.SCALING, diameter=diameter))
    ours = float(otdd_module.otdd(tiny_pair.x, tiny_pair.lx, tiny_pair.y, tiny_pair.ly, w, diameter=diameter).cost)
    assert ours == pytest.approx(theirs, rel=1e-10)


def test_geomloss_out_of_memory_is_a_recorded_failure_point(tiny_pair, monkeypatch):
    import geomloss_baseline

    def out_of_memory(*args, **kwargs):
        raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 13.41 GiB")

    monkeypatch.setattr(geomloss_baseline, "geomloss_otdd", out_of_memory)
    w = otdd_module.pair_label_distances(tiny_pair)
    record = otdd_module.run_geomloss(tiny_pair, w, 100.0, torch.device("cpu"), None)
    assert record["status"] == "out_of_memory" and "Tried to allocate 13.41 GiB" in record["message"]
    assert "value" not in record and record["memory"]["allocator"]["available"] is False


def test_label_embedding_refuses_non_euclidean_w():
    from geomloss_baseline import label_embedding

    w = np.array([[0.0, 1.0, 1.0], [1.0, 0.0, 9.0], [1.0, 9.0, 0.0]])  # √9 > √1 + √1
    with pytest.raises(ValueError, match="no Euclidean embedding"):
        label_embedding(w)


# ----------------------------------------------------------------------------- flow
def test_flow_decreases_otdd_and_writes_pictures(tiny_pair, tmp_path):
    import flow

    pair = otdd_module.LabelledPair(tiny_pair.x.float(), tiny_pair.lx, tiny_pair.y.float(), tiny_pair.ly)
    trace = flow.gradient_flow(pair, steps=3, step_size=0.25)
    values = trace.values
    assert len(values) == 4 and all(math.isfinite(v) for v in values)
    assert all(b < a for a, b in zip(values, values[1:])), values
    assert values[-1] < 0.7 * values[0], values  # a quarter of the way to the targets per step
    assert len(trace.selected) == 20 and trace.particles[0].shape == (20, 784)
    np.testing.assert_array_equal(trace.particles[0], pair.x[torch.as_tensor(trace.selected)].numpy())
    cross_first = trace.label_distances[0][:10, 10:].mean()
    cross_last = trace.label_distances[-1][:10, 10:].mean()
    assert cross_last < cross_first  # W recomputed: the MNIST classes moved towards Fashion's
    np.testing.assert_allclose(trace.label_distances[-1][10:, 10:], trace.label_distances[0][10:, 10:])

    record = flow.write_outputs(trace, tmp_path, {"n": 80})
    assert json.loads((tmp_path / "trace.json").read_text())["values"] == record["values"] == values
    with np.load(tmp_path / "particles.npz") as saved:
        assert saved["particles"].shape == (4, 20, 784)
    pytest.importorskip("matplotlib")
    flow.render(tmp_path)
    for name in ("particles.png", "otdd.png"):
        data = (tmp_path / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000, name


# ----------------------------------------------------------------------------- command line
def test_command_line_writes_json(tmp_path, otdd_data_dir):
    out = tmp_path / "results.json"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO / "build" / "python"), env.get("PYTHONPATH")) if p)
    env.setdefault("OMP_NUM_THREADS", "2")
    command = [sys.executable, str(EXAMPLE / "otdd.py"), "--data", str(otdd_data_dir), "--sizes", "40,60", "--device", "cpu",
               "--reference", "--out", str(out)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "OTDD =" in done.stderr  # progress on stderr
    report = json.loads(out.read_text())
    assert json.loads(done.stdout) == report
    assert [r["n"] for r in report["results"]] == [40, 60]
    for result in report["results"]:
        ours = result["flashsinkhorn"]
        assert 100 < ours["value"] < 5000 and ours["warm_value"] == ours["value"]
        assert ours["first_call_seconds"] > 0 and ours["warm_seconds"] > 0
        assert result["reference"]["within_tolerance"], result["reference"]
        assert result["reference"]["rel_diff"] <= 2e-5
        memory = ours["memory"]
        assert memory["allocator"]["available"] is False and "not a CUDA device" in memory["allocator"]["reason"]
        assert memory["nvidia_smi"]["available"] is False
    assert report["settings"]["eps"] == 0.1 and report["settings"]["scaling"] == 0.5
    assert report["versions"]["torch"] == torch.__version__ and report["date"]
    assert "git_commit" in report and report["machine"]["device"] == "cpu"
