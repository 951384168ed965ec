"""Data of the shuffled linear regression Y = Π*(XW*) + σE (SPEC §4, issue 8).

X (n × d_x) is a mixture of Gaussian blobs, W* (d_x × d_y) ~ N(0, 1), E ~ N(0, I), Π* a uniformly
random permutation of the rows; the regression sees X and Y but not Π*. The draws follow
`sklearn.datasets.make_blobs(n, d_x, centers=len(stds), cluster_std=stds)` (centres uniform in
[−10, 10]^d_x) and then the reference script of the known small case (OTT-Hessian,
`util.sample_bolb`: numpy's global RandomState seeded with `seed`, then W*, then E, then Π*) draw for
draw, and W0 = W* + N(0, 1) from RandomState(`init_seed`): seeds 2 and 1 give that case (n = 500,
d_x = 5, d_y = 2, stds 0.3/0.05/0.6, σ = 0.2). scikit-learn itself is not needed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

KNOWN_CASE = dict(n=500, d_x=5, d_y=2, stds=(0.3, 0.05, 0.6), noise=0.2, seed=2, init_seed=1)
CENTER_BOX = (-10.0, 10.0)  # make_blobs' default


@dataclass(frozen=True)
class RegressionData:
    """x (n, d_x), y (n, d_y) = shuffled x·w_star + noise, the blob of each row of x, the permutation
    (y[k] = (x·w_star + σE)[permutation[k]]) and the start w0 = w_star + N(0, 1); all float64."""

    x: np.ndarray
    y: np.ndarray
    w_star: np.ndarray
    w0: np.ndarray
    blob: np.ndarray
    permutation: np.ndarray
    noise: float


def blobs(n: int, d_x: int, stds: tuple, rng: np.random.RandomState) -> tuple[np.ndarray, np.ndarray]:
    """make_blobs' draws: centres U[−10, 10]^d_x, ⌊n/k⌋ points per blob (one more for the first n mod k
    blobs) drawn N(centre, std²I) blob after blob, then the rows shuffled."""
    k = len(stds)
    centres = rng.uniform(CENTER_BOX[0], CENTER_BOX[1], size=(k, d_x))
    counts = [n // k + (1 if i < n % k else 0) for i in range(k)]
    x = np.concatenate([rng.normal(loc=centres[i], scale=stds[i], size=(counts[i], d_x)) for i in range(k)])
    blob = np.repeat(np.arange(k), counts)
    order = np.arange(n)
    rng.shuffle(order)
    return x[order], blob[order]


def make_data(n: int = 500, d_x: int = 5, d_y: int = 2, stds: tuple = (0.3, 0.05, 0.6), noise: float = 0.2,
              seed: int = 2, init_seed: int = 1) -> RegressionData:
    """The problem for `seed` (defaults: the known small case). Deterministic in (n, seed, init_seed)."""
    if n < 1 or d_x < 1 or d_y < 1:
        raise ValueError(f"n, d_x, d_y must be ≥ 1, got {n}, {d_x}, {d_y}")
    rng = np.random.RandomState(seed)
    x, blob = blobs(n, d_x, tuple(stds), rng)
    w_star = rng.normal(size=(d_x, d_y))
    y = x @ w_star + noise * rng.normal(size=(n, d_y))
    permutation = rng.permutation(n)
    w0 = w_star + np.random.RandomState(init_seed).normal(size=(d_x, d_y))
    return RegressionData(x=x, y=y[permutation], w_star=w_star, w0=w0, blob=blob, permutation=permutation,
                          noise=float(noise))
