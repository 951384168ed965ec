// What a solve returns. Potentials follow GeomLoss's convention:
//   P_ij = a_i b_j exp((f_i + g_j − C_ij)/ε).
#pragma once

#include <string>
#include <vector>

namespace flashsinkhorn {

struct timings {
  double prepare_seconds = 0;  // validation, upload, centring, conversion
  double solve_seconds = 0;    // the Sinkhorn loop
  double total_seconds = 0;
};

// The primal objective's terms of a solved plan (solver::primal_objective; result's fields of the
// same names say what they are).
struct objective_terms {
  double primal_cost = 0;
  double relative_entropy = 0;
};

struct result {
  // OT_ε = ⟨a,f⟩ + ⟨b,g⟩ for balanced problems; S_ε when debiased; the dual value of the
  // unbalanced problem (Séjourné et al., Prop. 12, GeomLoss's formula) when a reach is set.
  double cost = 0;
  // The plan P below is the one every post-solve pass uses (solver.hpp: rows renormalised from g,
  // P_ij = m_i·softmax_j((g_j − C_ij)/ε + log b_j)); a, b are the weights as solved (normalised
  // unless options::normalize_weights is false). When debiased, both terms describe the plan of
  // OT_ε(a, b), not the Sinkhorn divergence that `cost` holds.
  double primal_cost = 0;  // ⟨P, C⟩: the transport cost without the entropy term
  // KL(P ‖ a⊗b) = Σ_ij P_ij log(P_ij/(a_i b_j)) − Σ_ij P_ij + Σ_i a_i·Σ_j b_j ≥ 0, the generalised
  // KL that ε multiplies in OT_ε = min_P ⟨P, C⟩ + ε·KL(P ‖ a⊗b) (0·log 0 = 0: zero weights add
  // nothing). Balanced, with weights of sum 1, at convergence (strong duality):
  //   cost = primal_cost + eps·relative_entropy   (up to the marginal error times |f|, |g|).
  // With balanced masses Σa = Σb = M ≠ 1 (normalize_weights = false) the mass terms no longer
  // cancel: cost = primal_cost + eps·(relative_entropy − M² + M). Unbalanced: the mass terms count
  // (Σ_ij P_ij ≠ Σ_i a_i), and the ρ·KL marginal penalties are not part of this term.
  // Precision: the term (g − C)/ε is divided by ε, so the modes' rounding enters scaled by 1/ε; on
  // the GPU the tf32/bf16 product also rounds g (≤ 2⁻¹¹·max|g − ḡ|/ε). Use fp32 or fp64 for KL at
  // small ε.
  double relative_entropy = 0;
  // (Both are NaN when options::primal_terms is off: solver::primal_objective() gives them.)
  int iterations = 0;      // (f, g) update pairs done, ε schedule included
  // L1 marginal error Σ_j |Σ_i P_ij − b_j| of the plan after the last f-update (rows are then
  // exact); for unbalanced problems the same expression measures the fixed-point residual.
  // The symmetric solver measures it in its last averaged iteration, before the final extrapolation
  // that gives the returned potentials: larger than theirs where measured, loosely so right after
  // the ε schedule (with no iterations after it, 13.0 where the returned pair's L1 errors were 0.13:
  // n = 300, ε = 0.09).
  double marginal_error = 0;
  bool converged = false;  // marginal_error ≤ tolerance at the last check
  // options::relaxation ≠ 1 and a check's marginal error rose more than 1% above the smallest
  // earlier one: the iterations after that check ran un-relaxed (ω = 1), or with ω − 1 halved
  // under options::adaptive_relaxation.
  bool relaxation_fell_back = false;
  double eps = 0;          // final ε
  std::string device;      // "cpu" or "cuda:<k> (<name>)"

  std::vector<double> f;  // (n,) potential on X
  std::vector<double> g;  // (m,) potential on Y
  std::vector<double> f_aa;  // (n,) potential of OT(a, a) when debiased, else empty
  std::vector<double> g_bb;  // (m,) potential of OT(b, b) when debiased, else empty

  timings time;
};

}  // namespace flashsinkhorn
