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

struct result {
  // OT_ε = ⟨a,f⟩ + ⟨b,g⟩ for balanced problems; S_ε when debiased; the dual value of the
  // unbalanced problem (Séjourné et al., Prop. 12, GeomLoss's formula) when a reach is set.
  double cost = 0;
  double primal_cost = 0;  // ⟨P, C⟩: the transport cost without the entropy term
  int iterations = 0;      // (f, g) update pairs done, ε schedule included
  // L1 marginal error Σ_j |Σ_i P_ij − b_j| of the plan after the last f-update (rows are then
  // exact); for unbalanced problems the same expression measures the fixed-point residual.
  double marginal_error = 0;
  bool converged = false;  // marginal_error ≤ tolerance at the last check
  double eps = 0;          // final ε
  std::string device;      // "cpu" or "cuda:<k> (<name>)"

  std::vector<double> f;  // (n,) potential on X
  std::vector<double> g;  // (m,) potential on Y
  std::vector<double> f_aa;  // (n,) potential of OT(a, a) when debiased, else empty
  std::vector<double> g_bb;  // (m,) potential of OT(b, b) when debiased, else empty

  timings time;
};

}  // namespace flashsinkhorn
