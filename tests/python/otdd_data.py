"""The MNIST / Fashion-MNIST training files for the OTDD tests: the real ones (FLASHSINKHORN_DATA, default
<repo>/../shared/data) when present, else a small synthetic stand-in written in the same format, so that
the example's and the CLI's whole pipelines (gzipped IDX, MD5SUMS, class Gaussians, W, the solve) run in
every checkout. Tests of facts about the real data (documented counts and statistics, the W fixture) skip
without it."""

from __future__ import annotations

import gzip
import hashlib
import os
import struct
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
DATA = Path(os.environ.get("FLASHSINKHORN_DATA", str(REPO.parent / "shared" / "data")))
TRAIN_FILES = tuple(f"{dataset}/train-{kind}-ubyte.gz" for dataset in ("mnist", "fashion-mnist")
                    for kind in ("images-idx3", "labels-idx1"))


def real_data_available() -> bool:
    return all((DATA / name).is_file() for name in TRAIN_FILES)


def write_synthetic_idx_data(folder: Path, count: int = 300, seed: int = 0) -> Path:
    """`count` training images per set in folder/{mnist,fashion-mnist}/ (gzipped IDX, big-endian headers:
    magic 2051 / 2049, counts, 28 × 28) and folder/MD5SUMS. Labels: every run of ten holds 0..9 once;
    each class is its own mean picture plus noise (uint8), distinct between the two sets, so classes and
    sets differ as the real ones do."""
    rng = np.random.default_rng(seed)
    sums = []
    for offset, dataset in enumerate(("mnist", "fashion-mnist")):
        (folder / dataset).mkdir(parents=True, exist_ok=True)
        # 0..9 in a shuffled order within every run of ten: any prefix of 20 holds each class twice
        labels = np.concatenate([rng.permutation(10) for _ in range(-(-count // 10))])[:count].astype(np.uint8)
        means = rng.uniform(0, 255, size=(10, 28 * 28)) * (0.5 + 0.5 * offset)
        images = np.clip(means[labels] + rng.normal(0, 40, size=(count, 28 * 28)), 0, 255).astype(np.uint8)
        files = {"train-images-idx3-ubyte.gz": struct.pack(">IIII", 2051, count, 28, 28) + images.tobytes(),
                 "train-labels-idx1-ubyte.gz": struct.pack(">II", 2049, count) + labels.tobytes()}
        for name, payload in files.items():
            path = folder / dataset / name
            path.write_bytes(gzip.compress(payload, mtime=0))
            sums.append(f"{hashlib.md5(path.read_bytes()).hexdigest()}  {dataset}/{name}")
    (folder / "MD5SUMS").write_text("\n".join(sums) + "\n")
    return folder
