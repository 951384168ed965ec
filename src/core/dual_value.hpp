// The value a solve returns, from the potentials (GeomLoss's sinkhorn_cost, per side):
//   φ_x(f) = f                               on a balanced side,
//   φ_x(f) = (ρ + ε/2)·(1 − e^{−f/ρ})        on a side with reach (Séjourné et al. 2019, Prop. 12);
//   OT_ε  = ⟨a, φ_x(f)⟩ + ⟨b, φ_y(g)⟩,
//   S_ε   = ⟨a, φ_x(f) − φ_x(f_aa)⟩ + ⟨b, φ_y(g) − φ_y(g_bb)⟩          (debias).
// Weights are the normalised ones.
#pragma once

#include <optional>
#include <vector>

namespace flashsinkhorn::detail {

struct dual_value_inputs {
  const std::vector<double>* a = nullptr;
  const std::vector<double>* b = nullptr;
  const std::vector<double>* f = nullptr;
  const std::vector<double>* g = nullptr;
  const std::vector<double>* f_aa = nullptr;  // set when debiasing
  const std::vector<double>* g_bb = nullptr;
  double eps = 1;
  std::optional<double> rho_x, rho_y;
};

double dual_value(const dual_value_inputs& in);

}  // namespace flashsinkhorn::detail
