"""The label-augmented cost of dataset distances (OTDD): C_ij = s·(λx‖x_i − y_j‖² + λy·W[l_i, l_j])."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True, slots=True)
class LabelCost:
    """Integer labels l_i ∈ [0, L) on the points of x and y and a label distance matrix W (L, L),
    symmetric, zero diagonal, ≥ 0 (OTDD: the squared 2-Wasserstein distances between the classes'
    Gaussians). The cost becomes C_ij = s·(feature_weight·‖x_i − y_j‖² + label_weight·W[l_i, l_j]),
    evaluated exactly by the plain kernels through an embedding of W (docs/math.md, "Label cost").
    Gradients with respect to x and y are those of the features (the labels are constants).

    Pass as `labels=` to `sinkhorn`, `Solver`, `apply_plan` or `barycentric_map`."""

    x_labels: Any
    y_labels: Any
    distances: Any
    feature_weight: float = 1.0
    label_weight: float = 1.0

    def core_arguments(self) -> tuple:
        """(x_labels, y_labels, W, λx, λy) as the binding reads them: contiguous int32 label arrays
        (labels outside int32 are refused, not wrapped), W as a float64/float32 array."""
        return (_int32_labels(self.x_labels, "x_labels"), _int32_labels(self.y_labels, "y_labels"),
                _host_matrix(self.distances), float(self.feature_weight), float(self.label_weight))


def _int32_labels(labels: Any, name: str) -> np.ndarray:
    if hasattr(labels, "detach"):  # a torch tensor
        labels = labels.detach().cpu().numpy()
    array = np.asarray(labels)
    if array.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {array.shape}")
    if array.size and not np.issubdtype(array.dtype, np.integer):
        raise ValueError(f"{name} must hold integers, got dtype {array.dtype}")
    if array.size and (array.min() < np.iinfo(np.int32).min or array.max() > np.iinfo(np.int32).max):
        raise ValueError(f"{name} has labels outside the int32 range")
    return np.ascontiguousarray(array, dtype=np.int32)


def _host_matrix(values: Any) -> np.ndarray:
    if hasattr(values, "detach"):
        values = values.detach().cpu().numpy()
    array = np.asarray(values)
    return array if array.dtype in (np.float32, np.float64) else array.astype(np.float64)
