"""GeomLoss's dense OTDD: SamplesLoss("sinkhorn", p=2, blur=√ε, scaling, debias=True,
backend="tensorized") on the augmented points [x, e_l], where ‖e_l − e_l'‖² = W[l, l'].

GeomLoss's p = 2 cost is ½‖·‖², so ½‖[x, e_l] − [x', e_l']‖² = ½(‖x − x'‖² + W[l, l']) is the OTDD
cost exactly. The embedding is classical MDS: B = −½JWJ (J = I − 11ᵀ/L) = EΛEᵀ, e_l = (E√Λ)_l,
valid when B is positive semidefinite (W a squared Euclidean distance matrix), which holds for the
MNIST/Fashion W (shared/data/README.md); otherwise this baseline refuses with ValueError.
The tensorized backend holds n×m cost matrices: it is the dense memory baseline.
"""

from __future__ import annotations

import numpy as np
import torch


def label_embedding(w: np.ndarray, negative_tolerance: float = 1e-9, reconstruction_tolerance: float = 1e-8
                    ) -> np.ndarray:
    """e (L, r) with ‖e_l − e_l'‖² = W[l, l'] (classical MDS, float64); ValueError when −½JWJ has an
    eigenvalue below −negative_tolerance·max|λ| or the reconstruction misses W by more than
    reconstruction_tolerance·max W."""
    w = np.asarray(w, dtype=np.float64)
    classes = w.shape[0]
    centring = np.eye(classes) - 1.0 / classes
    eigenvalues, vectors = np.linalg.eigh(-0.5 * centring @ w @ centring)
    scale = np.abs(eigenvalues).max() if classes else 0.0
    if eigenvalues.min() < -negative_tolerance * scale:
        raise ValueError(f"W has no Euclidean embedding: −½JWJ has eigenvalue {eigenvalues.min():.3e} "
                         f"(largest |λ| {scale:.3e}); GeomLoss's cost cannot express it — use fs.LabelCost")
    keep = eigenvalues > negative_tolerance * scale
    embedding = vectors[:, keep] * np.sqrt(eigenvalues[keep])
    rebuilt = ((embedding[:, None, :] - embedding[None, :, :]) ** 2).sum(-1)
    error = np.abs(rebuilt - w).max()
    if error > reconstruction_tolerance * max(w.max(), 1e-300):
        raise ValueError(f"the MDS embedding reproduces W only to {error:.3e} (max W {w.max():.3e})")
    return embedding


def augmented(x: torch.Tensor, labels: torch.Tensor, embedding: torch.Tensor) -> torch.Tensor:
    """[x_i, e_{l_i}], (n, d + r)."""
    return torch.cat([x, embedding[labels.to(embedding.device)]], dim=1)


def geomloss_otdd(x: torch.Tensor, lx: torch.Tensor, y: torch.Tensor, ly: torch.Tensor, w: torch.Tensor, *,
                  eps: float, scaling: float, diameter: float) -> torch.Tensor:
    """S_ε by GeomLoss's tensorized backend on [x, e_l] (the ε-schedule from `diameter`, as ours)."""
    from geomloss import SamplesLoss

    embedding = torch.as_tensor(label_embedding(w.detach().cpu().numpy()), dtype=x.dtype, device=x.device)
    loss = SamplesLoss("sinkhorn", p=2, blur=eps**0.5, scaling=scaling, debias=True, backend="tensorized",
                       diameter=diameter)
    return loss(augmented(x, lx, embedding), augmented(y, ly, embedding))


def is_out_of_memory(error: BaseException) -> bool:
    """torch.cuda.OutOfMemoryError, or the CPU allocator's refusal (a RuntimeError)."""
    if isinstance(error, torch.cuda.OutOfMemoryError):
        return True
    text = str(error).lower()
    return isinstance(error, (RuntimeError, MemoryError)) and (
        "out of memory" in text or "can't allocate memory" in text or "not enough memory" in text
        or isinstance(error, MemoryError))
