// The label distance of OTDD (Alvarez-Melis & Fusi 2020): every class is summarised by a Gaussian
// N(μ, Σ) (sample mean, unbiased covariance, float64) and two classes are as far apart as the squared
// 2-Wasserstein distance between their Gaussians (mean term + Bures term):
//   W₂²(N(μ, Σ), N(μ', Σ')) = ‖μ − μ'‖² + tr Σ + tr Σ' − 2·tr (Σ^½ Σ' Σ^½)^½.
// The cross term through factors: for any F, F' with FᵀF = Σ and F'ᵀF' = Σ' (F = U·Σ^½ with U a
// partial isometry, polar decomposition), tr (Σ^½ Σ' Σ^½)^½ = ‖Σ^½ Σ'^½‖_* = ‖F F'ᵀ‖_*, the sum of the
// singular values of the small k×k' matrix G = F F'ᵀ, i.e. Σ_k √λ_k(G Gᵀ) (G Gᵀ positive semidefinite
// by construction; eigenvalues below 0 from rounding are taken as 0).
// The factor of a class of `count` samples is its centred data, in count − 1 orthonormal (Helmert)
// combinations, over √(count − 1) when count − 1 ≤ d (no d×d work: small classes cost almost nothing),
// else Λ^½Vᵀ from Σ = VΛVᵀ without the eigenvalues that are zero up to rounding (k ≤ d).
// Accuracy: each cross term is a sum of k square roots of eigenvalues, each good to about
// √(k·ε_mach)·‖G‖ when it is near 0 — relative errors of W ~1e-9 to 1e-8 in float64.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

namespace flashsinkhorn::cli {

struct class_gaussian {
  std::int64_t count = 0;       // samples the statistics came from (0: built from a covariance)
  std::vector<double> mean;     // (d,)
  std::int64_t factor_rows = 0; // k
  std::vector<double> factor;   // F (k, d) row-major with FᵀF = Σ, the unbiased covariance

  [[nodiscard]] std::int64_t dim() const noexcept { return static_cast<std::int64_t>(mean.size()); }
};

// The Gaussian of `samples` ((count, dim) row-major). Needs count ≥ 2 (std::invalid_argument otherwise).
[[nodiscard]] class_gaussian fit_gaussian(std::span<const double> samples, std::int64_t count, std::int64_t dim);

// N(mean, covariance) for a given (dim, dim) row-major covariance (symmetric positive semidefinite;
// eigenvalues below 0 from rounding are taken as 0).
[[nodiscard]] class_gaussian gaussian_from_covariance(std::span<const double> mean, std::span<const double> covariance);

// Σ = FᵀF, (d, d) row-major.
[[nodiscard]] std::vector<double> covariance_of(const class_gaussian& g);

// W₂²(N(a), N(b)) for one pair; both of one dimension (std::invalid_argument otherwise).
[[nodiscard]] double squared_w2_gaussians(const class_gaussian& a, const class_gaussian& b);

// Called after each pair with the pairs done and L(L−1)/2, from one thread at a time; must not throw.
using distance_progress = std::function<void(int done, int total)>;

// The (L, L) row-major matrix W[l, l'] = W₂²(N_l, N_l') of L Gaussians: symmetric, zero diagonal,
// ≥ 0 (a negative value from rounding is set to 0). The L(L−1)/2 pairs are spread over `threads`
// OpenMP threads (0: OpenMP's default).
[[nodiscard]] std::vector<double> squared_w2_label_distances(const std::vector<class_gaussian>& classes, int threads,
                                                             const distance_progress& on_progress = {});

}  // namespace flashsinkhorn::cli
