"""MNIST / Fashion-MNIST from their gzipped IDX files, and the OTDD features (pixel/255 − 0.1307)/0.3081.

IDX (big-endian): uint32 magic = 0x0000 · dtype code · number of dimensions (0x00000803: uint8 images
N×28×28, 0x00000801: uint8 labels N), one uint32 per dimension, then the values row-major. Every
malformed input — a bad gzip stream, a truncated file, a wrong magic, a data size that disagrees with
the header, a checksum mismatch — raises ValueError naming the file and the problem.
"""

from __future__ import annotations

import gzip
import hashlib
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

IMAGES_MAGIC = 0x00000803  # uint8, 3 dimensions
LABELS_MAGIC = 0x00000801  # uint8, 1 dimension
UBYTE_CODE = 0x08
PIXEL_MEAN, PIXEL_STD = 0.1307, 0.3081  # MNIST's train statistics, used for both datasets (SPEC §4)
DATASETS = ("mnist", "fashion-mnist")


def read_idx(path: str | Path, expected_magic: int | None = None) -> np.ndarray:
    """The array of one gzipped IDX file of unsigned bytes, shaped by its header."""
    path = Path(path)
    try:
        with gzip.open(path, "rb") as stream:
            raw = stream.read()
    except (OSError, EOFError, zlib.error) as error:  # gzip.BadGzipFile is an OSError
        raise ValueError(f"{path}: not a complete gzip stream ({error})") from error
    if len(raw) < 4:
        raise ValueError(f"{path}: {len(raw)} bytes, too short for an IDX magic number")
    (magic,) = struct.unpack(">I", raw[:4])
    if expected_magic is not None and magic != expected_magic:
        raise ValueError(f"{path}: magic number 0x{magic:08x}, expected 0x{expected_magic:08x}")
    if magic >> 16 != 0 or (magic >> 8) & 0xFF != UBYTE_CODE:
        raise ValueError(f"{path}: magic number 0x{magic:08x} is not an unsigned-byte IDX file")
    ndim = magic & 0xFF
    header = 4 + 4 * ndim
    if ndim == 0 or len(raw) < header:
        raise ValueError(f"{path}: header of {ndim} dimensions needs {header} bytes, file has {len(raw)}")
    shape = struct.unpack(f">{ndim}I", raw[4:header])
    expected = int(np.prod(shape, dtype=np.int64))
    found = len(raw) - header
    if found != expected:
        raise ValueError(f"{path}: header shape {shape} needs {expected} data bytes, found {found}"
                         f" ({'truncated' if found < expected else 'trailing bytes'})")
    return np.frombuffer(raw, dtype=np.uint8, offset=header).reshape(shape)


def md5_of(path: str | Path) -> str:
    digest = hashlib.md5()
    with open(path, "rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def verify_md5(data_dir: str | Path, relative_path: str) -> None:
    """Checks data_dir/relative_path against its line in data_dir/MD5SUMS (`<md5>  <relative path>`)."""
    data_dir = Path(data_dir)
    sums = data_dir / "MD5SUMS"
    if not sums.exists():
        raise ValueError(f"{sums}: missing, cannot verify {relative_path}")
    expected = None
    for line in sums.read_text().splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].lstrip("*") == relative_path:
            expected = parts[0].lower()
    if expected is None:
        raise ValueError(f"{sums}: no checksum listed for {relative_path}")
    actual = md5_of(data_dir / relative_path)
    if actual != expected:
        raise ValueError(f"{data_dir / relative_path}: MD5 {actual}, expected {expected} (from {sums})")


@dataclass(frozen=True)
class Split:
    """images (N, 28, 28) uint8 and labels (N,) uint8 in 0..9 of one dataset split."""

    images: np.ndarray
    labels: np.ndarray


def load_split(data_dir: str | Path, dataset: str, split: str = "train", verify: bool = True) -> Split:
    """data_dir/<dataset>/<split>-{images-idx3,labels-idx1}-ubyte.gz, MD5-checked when `verify`."""
    if dataset not in DATASETS:
        raise ValueError(f"dataset must be one of {DATASETS}, got {dataset!r}")
    if split not in ("train", "t10k"):
        raise ValueError(f"split must be 'train' or 't10k', got {split!r}")
    data_dir = Path(data_dir)
    image_file = f"{dataset}/{split}-images-idx3-ubyte.gz"
    label_file = f"{dataset}/{split}-labels-idx1-ubyte.gz"
    if verify:
        verify_md5(data_dir, image_file)
        verify_md5(data_dir, label_file)
    images = read_idx(data_dir / image_file, IMAGES_MAGIC)
    labels = read_idx(data_dir / label_file, LABELS_MAGIC)
    if images.shape[0] != labels.shape[0]:
        raise ValueError(f"{data_dir / dataset}: {images.shape[0]} images but {labels.shape[0]} labels in {split}")
    if labels.size and labels.max() > 9:
        raise ValueError(f"{data_dir / label_file}: label {int(labels.max())} outside 0..9")
    return Split(images, labels)


def features(images: np.ndarray, dtype: type = np.float32) -> np.ndarray:
    """(pixel/255 − 0.1307)/0.3081, one row of 784 per image, computed and returned in `dtype`."""
    flat = images.reshape(images.shape[0], -1).astype(dtype)
    return (flat / dtype(255) - dtype(PIXEL_MEAN)) / dtype(PIXEL_STD)


def pixels(feature_rows: np.ndarray) -> np.ndarray:
    """The inverse of `features`, clipped to [0, 1]: feature·0.3081 + 0.1307, shaped (N, 28, 28)."""
    values = np.asarray(feature_rows, dtype=np.float64) * PIXEL_STD + PIXEL_MEAN
    return np.clip(values, 0.0, 1.0).reshape(-1, 28, 28)
