// The label cost as coordinates: why the kernels need no lookup of W.
//
// Cost (label_cost.hpp): C_ij = s·(λx‖x_i − y_j‖² + λy·W[l_i, l_j]), W symmetric with zero diagonal.
//
// 1. Every such W is a pseudo-Euclidean squared distance (classical MDS; Pękalska & Duin 2005, ch. 3).
//    With J = I − 11ᵀ/L the centring matrix, B = −½·J·W·J is symmetric and, since W_ll = 0,
//      B_ll + B_l'l' − 2B_ll' = W_ll'                                            (exact).
//    Diagonalise B = E·Λ·Eᵀ, and let u_l = (E_lk·√|λ_k|)_k, η_k = sign(λ_k). Then
//      W_ll' = Σ_k λ_k (E_lk − E_l'k)² = Σ_k η_k (u_lk − u_l'k)² = ‖u_l − u_l'‖²_η.
//    Eigenvalues with |λ_k| ≤ 1e-12·max|λ| are dropped (the eigenvector 1 of J is always one), which
//    moves W by at most ~1e-12·L·max|λ|. So r ≤ L − 1 coordinates per label.
// 2. Appending c·u_l (c = √(λy/λx)) to every point, p_i = [x_i, c·u_{l_i}], q_j = [y_j, c·u_{l_j}]:
//      C_ij = s'·‖p_i − q_j‖²_η,   s' = s·λx,   η = +1 on the d features.
//    (λx is folded into the cost scale, so the features stay the caller's: the gradient with respect
//    to x is the first d columns of the gradient with respect to p; the label coordinates are constants.)
// 3. When −½JWJ is PSD (W a squared Euclidean distance) every η_k = +1: the plain augmented cloud, and
//    the plain kernels serve unchanged. Otherwise the negative-signature coordinates are stored last and
//      C_ij = s'(‖p_i‖²_η + ‖q_j‖²_η − 2·p_i·(η⊙q_j)),   ‖p‖²_η = Σ_{η=+1} p_k² − Σ_{η=−1} p_k²  (may be < 0):
//    the attention form of SPEC §1 with the keys' points η⊙q and signed squared norms. The rows see
//    p, the keys see η⊙q (prepared_cloud::key_points), and every kernel — CPU, CUDA FMA and all the
//    tensor-core variants — evaluates this cost exactly as it evaluates the Euclidean one. This replaces
//    SPEC's "gather W inside the tile loop": the same exact cost, no per-entry gather, tensor cores kept.
//    Negation is exact in every format, so the rounded key copy is η⊙(rounded p), and the norms come
//    from the same rounded values the dot products see (the rule of prepared_cloud.hpp).
//    Centring still applies: ‖(p − μ) − (q − μ)‖²_η = ‖p − q‖²_η.
//    Precision: the terms of the signed form can exceed C when λ_min(B) < 0 is large; the rounding error
//    of a single-precision mode scales with Σ_k |p_k q_k| rather than with C (docs/math.md).
#pragma once

#include <cstdint>
#include <vector>

namespace flashsinkhorn::detail {

struct label_embedding {
  std::int64_t label_count = 0;     // L
  std::int64_t dim = 0;             // r: coordinates per label, positive-signature ones first
  std::int64_t negative_dim = 0;    // the last negative_dim coordinates have η = −1
  std::vector<double> coordinates;  // (L, r) row-major: u_l
};

// u_l for a validated W ((L, L) row-major, symmetric, zero diagonal, finite). Throws flashsinkhorn::error
// when the eigensolver fails.
label_embedding embed_label_distances(const std::vector<double>& distances, std::int64_t label_count);

// (count, dim + r) row-major: each row of `points` ((count, dim)) followed by scale·u_{labels[i]}.
std::vector<double> append_label_coordinates(const std::vector<double>& points, std::int64_t dim,
                                             const std::vector<std::int32_t>& labels,
                                             const label_embedding& embedding, double scale);

}  // namespace flashsinkhorn::detail
