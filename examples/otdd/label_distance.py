"""W[l, l'] = W₂²(N(μ_l, Σ_l), N(μ_l', Σ_l')) = ‖μ_l − μ_l'‖² + tr Σ_l + tr Σ_l' − 2 tr(Σ_l^½ Σ_l' Σ_l^½)^½.

The label distance of OTDD: the squared 2-Wasserstein distance between the Gaussians fitted to each
class (mean and unbiased covariance Σ = Σ_i (x_i − μ)(x_i − μ)ᵀ/(n_l − 1)), all in float64 on the
features' device.

The fidelity term tr(Σ^½ Σ' Σ^½)^½ is computed from factors F with Σ = F Fᵀ: Σ^½ Σ' Σ^½ and
G = (FᵀF')(FᵀF')ᵀ = Fᵀ Σ' F have the same nonzero eigenvalues λ_k, so the term is Σ_k √λ_k(G), from
a symmetric eigendecomposition (torch.linalg.eigvalsh, tiny negative λ clamped to 0). With F = Σ^½
(from torch.linalg.eigh) G is exactly the textbook Σ^½ Σ' Σ^½; for a class with n_l ≤ d points
the centred samples F = (X_l − μ_l)ᵀ/√(n_l − 1) (d × n_l) serve with no d × d decomposition — the
same value, much cheaper for the small classes of tests and short flows.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class ClassGaussians:
    """means (L, d), factors (L, d, k) with Σ_l = F_l F_lᵀ (zero columns pad the thin ones), counts (L,)."""

    means: torch.Tensor
    factors: torch.Tensor
    counts: torch.Tensor

    def covariances(self) -> torch.Tensor:
        """Σ_l = F_l F_lᵀ, (L, d, d)."""
        return self.factors @ self.factors.transpose(1, 2)

    def traces(self) -> torch.Tensor:
        """tr Σ_l = ‖F_l‖²_F, (L,)."""
        return self.factors.square().sum(dim=(1, 2))

    @staticmethod
    def concatenate(parts: "list[ClassGaussians]") -> "ClassGaussians":
        """The classes of several sets, in order (the factors padded to the widest)."""
        width = max(p.factors.shape[2] for p in parts)
        factors = [torch.nn.functional.pad(p.factors, (0, width - p.factors.shape[2])) for p in parts]
        return ClassGaussians(torch.cat([p.means for p in parts]), torch.cat(factors),
                              torch.cat([p.counts for p in parts]))


def psd_sqrt(matrices: torch.Tensor) -> torch.Tensor:
    """Σ^½ = V diag(√max(λ, 0)) Vᵀ for a batch of symmetric PSD matrices (batched eigh)."""
    eigenvalues, vectors = torch.linalg.eigh(matrices)
    return (vectors * eigenvalues.clamp_min(0).sqrt().unsqueeze(-2)) @ vectors.transpose(-1, -2)


def class_gaussians(features: torch.Tensor, labels: torch.Tensor, num_classes: int) -> ClassGaussians:
    """Mean and unbiased covariance factor of each class 0..num_classes−1 (float64, features' device).

    Every class needs at least 2 points (the unbiased covariance); fewer raises ValueError."""
    x = features.detach().to(torch.float64)
    labels = labels.to(x.device).long()
    n, d = x.shape
    counts = torch.bincount(labels, minlength=num_classes)
    if counts.numel() > num_classes:
        raise ValueError(f"labels go up to {counts.numel() - 1}, but num_classes = {num_classes}")
    small = [c for c in range(num_classes) if counts[c] < 2]
    if small:
        raise ValueError(f"classes {small} have fewer than 2 points (counts {counts[small].tolist()}); "
                         "the unbiased covariance needs 2 — use more points")
    width = min(d, int(counts.max()))  # thin factors when every class has ≤ d points
    means = torch.zeros(num_classes, d, dtype=torch.float64, device=x.device)
    factors = torch.zeros(num_classes, d, width, dtype=torch.float64, device=x.device)
    wide = []
    for c in range(num_classes):
        points = x[labels == c]
        means[c] = points.mean(dim=0)
        centred = (points - means[c]) / (points.shape[0] - 1) ** 0.5  # (n_c, d)
        if points.shape[0] <= width:
            factors[c, :, :points.shape[0]] = centred.T
        else:
            wide.append((c, centred.T @ centred))  # Σ_c, (d, d)
    if wide:
        roots = psd_sqrt(torch.stack([cov for _, cov in wide]))
        for (c, _), root in zip(wide, roots):
            factors[c] = root
    return ClassGaussians(means, factors, counts)


def bures_wasserstein_matrix(gaussians: ClassGaussians, row_block: int = 5) -> torch.Tensor:
    """W (L, L): W₂² between every pair of class Gaussians; symmetric, zero diagonal, ≥ 0 (float64).

    Pairs are processed row_block·L at a time: two (row_block·L, k, k) float64 tensors, 490 MB each
    for L = 20, k = d = 784."""
    means, factors = gaussians.means, gaussians.factors
    classes = means.shape[0]
    fidelity = torch.zeros(classes, classes, dtype=torch.float64, device=means.device)
    rows, cols = torch.triu_indices(classes, classes, device=means.device)
    pair_block = row_block * classes
    for start in range(0, rows.numel(), pair_block):
        i, j = rows[start:start + pair_block], cols[start:start + pair_block]
        cross = factors[i].transpose(1, 2) @ factors[j]  # FᵢᵀFⱼ, (pairs, k, k)
        gram = cross @ cross.transpose(1, 2)  # Fᵢᵀ Σⱼ Fᵢ, same nonzero spectrum as Σᵢ^½ Σⱼ Σᵢ^½
        fidelity[i, j] = torch.linalg.eigvalsh(gram).clamp_min(0).sqrt().sum(dim=1)
    fidelity = torch.triu(fidelity) + torch.triu(fidelity, 1).T
    traces = gaussians.traces()
    w = (means[:, None, :] - means[None, :, :]).square().sum(-1) + traces[:, None] + traces[None, :] - 2 * fidelity
    w = 0.5 * (w + w.T)
    w.fill_diagonal_(0)
    return w.clamp_min(0)


def label_distances(features: torch.Tensor, labels: torch.Tensor, num_classes: int) -> torch.Tensor:
    """W of the classes of one labelled set (labels 0..num_classes−1): class_gaussians, then W₂²."""
    return bures_wasserstein_matrix(class_gaussians(features, labels, num_classes))
