// The contract between the solver loops (src/core) and a compute backend (src/cpu, src/cuda).
//
// A backend owns the two prepared clouds (centred, cosine-normalised, rounded to the precision
// mode, squared norms computed from the rounded values) and a few potential vectors ("slots").
// Everything it does is one of two streamed passes over the score matrix
//   S_ij = (h_j − C_ij)/ε + log w_j,   C_ij = s‖p_i − q_j‖² = s‖p_i‖² + s‖q_j‖² − 2s·p_i·q_j,
// where p are the points of the `rows` side and q, w, h those of the `keys` side:
//   softmin     one potential update (a Sinkhorn half-step), fused with damping, averaging and the
//               marginal-error term;
//   plan_rows   FlashAttention's forward: per row, the LSE and Σ_j softmax_j(S_i·)·[V_j, C_ij];
//   plan_quadratic_rows  the same with each term also weighted by a second score u_i·q_j (a
//               second GEMM U·Kᵀ next to Q·Kᵀ): the Hessian-vector product's "two-GEMM" term.
// None ever holds more than a tile of S.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/projected_cg.hpp"
#include "flashsinkhorn/array_view.hpp"

namespace flashsinkhorn::detail {

enum class side : int { x = 0, y = 1 };

class matrix_store;  // core/matrix_store.hpp

[[nodiscard]] constexpr side other(side s) noexcept { return s == side::x ? side::y : side::x; }

// Potential vectors held by a backend. f-slots live on X (length n), g-slots on Y (length m).
enum class slot : int {
  f, g,                   // the potentials of OT(a, b)
  f_next, g_next,         // double buffers for simultaneous (symmetric) updates
  f_aa, g_bb,             // debiasing: OT(a, a) and OT(b, b) potentials
  f_aa_next, g_bb_next,
};
inline constexpr int kSlotCount = 8;

[[nodiscard]] constexpr side side_of(slot s) noexcept {
  return static_cast<int>(s) % 2 == 0 ? side::x : side::y;
}

// One Sinkhorn half-step on the `rows` side:
//   T_i   = −ε · LSE_j [ (h_j − C_ij)/ε + log w_j ]        h = key_potential (0 when unset)
//   new_i = damping · T_i                                  (damping = (1 + ε/ρ)⁻¹, 1 if balanced)
//   out_i = (1 − blend)·previous_i + blend·new_i           (blend = ½ for symmetric steps, ω for
//                                                           over-relaxed ones, in (0, 2))
//   error += Σ_i w_i · |exp((previous_i − new_i)/ε) − 1|   (w: the rows' weights)
// With damping = 1 the error term is the L1 marginal error of the plan (previous, h) on the rows'
// side, whatever the blend: it compares previous with the un-blended new value, never with out.
// `previous` may equal `out` (each row reads its old value before writing).
// Rows and keys may be the same cloud (debiasing: OT(a, a)).
struct softmin_step {
  side rows = side::x;
  side keys = side::y;
  std::optional<slot> key_potential;
  std::optional<slot> previous;  // required when blend < 1 or accumulate_error
  slot out = slot::f;
  double eps = 1;
  double damping = 1;
  double blend = 1;
  bool accumulate_error = false;
};

// Per-row results of a plan pass with rows on `rows`, keys on `keys`, key potential `key_potential`:
//   lse_i       = LSE_j S_ij                               (so T_i = −ε·lse_i)
//   weighted_i  = Σ_j softmax_j(S_i·) · V_j                (V: (keys count, k) float64, row-major)
//   cost_i      = Σ_j softmax_j(S_i·) · C_ij               (C in prepared coordinates)
// Outputs are float64 host vectors sized by the backend; `weighted` stays empty when k == 0.
struct plan_rows_request {
  side rows = side::x;
  side keys = side::y;
  slot key_potential = slot::g;
  double eps = 1;
  const double* values = nullptr;  // (keys count, k) or nullptr
  std::int64_t k = 0;
  bool want_cost = false;
};

// The request for a pass with rows on `rows` against the side that holds `key` (the usual pairing:
// x-rows keyed by a g-slot, y-rows by an f-slot).
[[nodiscard]] inline plan_rows_request plan_pass_request(side rows, slot key, double eps, const double* values,
                                                         std::int64_t k, bool want_cost = false) {
  plan_rows_request request;
  request.rows = rows;
  request.keys = side_of(key);
  request.key_potential = key;
  request.eps = eps;
  request.values = values;
  request.k = k;
  request.want_cost = want_cost;
  return request;
}

struct plan_rows_result {
  std::vector<double> lse;       // (rows count,)
  std::vector<double> weighted;  // (rows count, k)
  std::vector<double> cost;      // (rows count,) when want_cost
};

// Per-row results of a quadratic plan pass (rows, keys, key potential and eps as in plan_rows):
//   lse_i       = LSE_j S_ij
//   weighted_i  = Σ_j softmax_j(S_i·) · (u_i·z_j) · V_j
// u: (rows count, dim) float64 row-major, one direction per row; V: (keys count, k) float64;
// z_j: a key-side vector, by default (key_directions == nullptr) the keys' points in their role
// (η⊙q, prepared_cloud::key_role_points) as the backend stores them (rounded to the precision
// mode, like the scores' operands). With z = V = the keys' points this is
// Σ_j softmax_ij (u_i·q_j) q_j, i.e. (Σ_j softmax_ij q_j q_jᵀ)·u_i without the d×d matrices.
// With key_directions given, z_j is that row of it, used as given (no η, the scores unchanged):
// the joint Hessian-vector product's cross term Σ_j P_ij (x_i·B_j) y_j is u = x, z = B, V = y
// (core/joint_hvp.hpp). A backend whose supports_key_directions() is false must not be sent one
// (core/solved_plan.cpp falls back to the generic pass).
// The generic implementation (core/plan_quadratic_generic.hpp) is one plan_rows pass with the
// k·dim values z_j ⊗ V_j; a backend may instead fuse the second product into its tile loop.
struct plan_quadratic_request {
  side rows = side::x;
  side keys = side::y;
  slot key_potential = slot::g;
  double eps = 1;
  const double* directions = nullptr;  // (rows count, dim), required
  const double* values = nullptr;      // (keys count, k), required
  std::int64_t k = 0;                  // ≥ 1
  // (keys count, dim) z_j; nullptr: the keys' points in their role (the single-cloud HVP's pass).
  const double* key_directions = nullptr;
};

// The gradient of a plan's value with respect to the points p of `rows` (envelope theorem):
//   ∇_i = coefficient · m_i · (p_i − Σ_j softmax_j(S_i·)·q_j)
// with the softmax of a plan pass (plan_rows_request), p and q the prepared points before any
// rounding to the precision mode (so that the only rounded quantity is the plan itself), and the
// row masses m_i = w_i on a balanced side, w_i·exp(f_i/ε + lse_i) (f: `row_potential`) on a side
// with reach. The result stays in the backend, in a gradient buffer of the rows' side: written, or
// added to when `accumulate` (the debiasing term), until read_point_gradient copies it out.
struct point_gradient_request {
  side rows = side::x;
  side keys = side::y;
  slot key_potential = slot::g;
  slot row_potential = slot::f;
  double eps = 1;
  bool unbalanced_rows = false;
  double coefficient = 1;  // 2s, or −2s for the debiasing term
  bool accumulate = false;
};

// One term Σ_i w_i·φ(h_i) of the dual value (core/dual_value.hpp): the potential h and the reach² ρ
// of its side (unset: balanced, φ(h) = h).
struct dual_term_request {
  slot potential = slot::f;
  std::optional<double> rho;
};

// The primal objective's two terms of a solved plan (result.hpp: primal_cost, relative_entropy).
struct primal_summary {
  double transport = 0;         // ⟨P, C⟩
  double relative_entropy = 0;  // KL(P ‖ a⊗b), generalised
};

// The Schur complement of a solved balanced problem's linearised potential system
// (core/potential_system.hpp) as a backend's passes see it, on m-vectors v:
//   S·v = c∘v − μ∘A_y(w∘A_x(v))
//   A_x(v)_i = Σ_j softmax_j(S_i·)·v_j   the x-rows pass keyed by slot g   (= diag(1/a)·P·v)
//   A_y(u)_j = Σ_i softmax_i(S_j·)·u_i   the y-rows pass keyed by slot f
// with w (n,) the key reweighting, μ (m,) the column masses and c = Pᵀ1 (m,) of
// core/solved_plan.hpp.
struct schur_system {
  double eps = 1;
  const std::vector<double>* key_reweight = nullptr;   // w
  const std::vector<double>* column_masses = nullptr;  // μ
  const std::vector<double>* column_sums = nullptr;    // c
  // Set: precondition with the sparse S_k of each x row's largest entries (the x-rows pass keyed by
  // g; core/sparse_plan_preconditioner.hpp), S_k = diag(c + sparse_shift) − Σ_i a_i s_i s_iᵀ with
  // a = *sparse_row_masses, where the backend can build it (solve_schur's `diagonal` is then not
  // used); a backend that cannot returns std::nullopt.
  const std::vector<double>* sparse_row_masses = nullptr;
  double sparse_shift = 0;
};

class backend {
 public:
  virtual ~backend() = default;

  [[nodiscard]] virtual std::string name() const = 0;

  virtual void softmin(const softmin_step& step) = 0;

  // The error accumulated since the last call, then reset to 0. One device→host read.
  virtual double take_error() = 0;

  // An empty `values` writes zeros.
  virtual void write_potential(slot s, const std::vector<double>& values) = 0;
  [[nodiscard]] virtual std::vector<double> read_potential(slot s) const = 0;
  virtual void copy_potential(slot dst, slot src) = 0;
  virtual void swap_potentials(slot a, slot b) = 0;

  [[nodiscard]] virtual plan_rows_result plan_rows(const plan_rows_request& request) const = 0;

  // result.cost stays empty.
  [[nodiscard]] virtual plan_rows_result plan_quadratic_rows(const plan_quadratic_request& request) const = 0;
  // Whether plan_quadratic_rows honours request.key_directions. false (the default): the caller
  // must not set it and runs the generic pass instead (core/plan_quadratic_generic.hpp).
  [[nodiscard]] virtual bool supports_key_directions() const { return false; }

  // Where this backend keeps matrices between passes (core/matrix_store.hpp): the CUDA backend's
  // device store; nullptr (the default): the caller uses a host store over plan_rows.
  [[nodiscard]] virtual matrix_store* matrices() const { return nullptr; }

  virtual void point_gradient(const point_gradient_request& request) = 0;

  // Copies the first out.cols columns of the gradient buffer of side `s` into `out` (its dtype and
  // strides; host memory, or device memory of this backend's GPU for the CUDA backend).
  virtual void read_point_gradient(side s, const mutable_matrix_view& out) const = 0;

  // Projected preconditioned CG on S·z = rhs (schur_system; core/projected_cg.hpp: the same
  // recurrence, projections, stopping rule and outcome) where the backend's vectors live, so that
  // no iteration waits for the host. std::nullopt: this backend has no such solver and the caller
  // runs core/projected_cg.hpp over plan_rows (the CPU backend, whose vectors are host vectors).
  [[nodiscard]] virtual std::optional<projected_cg_outcome> solve_schur(const schur_system& /*system*/,
                                                                        const std::vector<double>& /*rhs*/,
                                                                        const std::vector<double>& /*diagonal*/,
                                                                        const projected_cg_settings& /*settings*/) const {
    return std::nullopt;
  }

  // Reads that leave the data where the backend holds it: what a solve on the caller's CUDA arrays
  // reports without moving a potential to the host (solver.cpp). Each returns false / std::nullopt
  // where this backend does not do it (the default); the solver then takes the host path.

  // Copies slot `s` into `out` (its dtype and stride): host memory, or for the CUDA backend device
  // memory of its GPU, written in the order of the caller's stream (options::cuda_stream).
  [[nodiscard]] virtual bool read_potential_into(slot /*s*/, const mutable_vector_view& /*out*/) const { return false; }

  // Σ_i w_i·φ(h_i) over the weights w of the side of h, for each requested h (core/dual_value.hpp's
  // terms), computed together and read back at once.
  [[nodiscard]] virtual std::optional<std::vector<double>> weighted_dual_terms(
      const std::vector<dual_term_request>& /*terms*/, double /*eps*/) const {
    return std::nullopt;
  }

  // ⟨P, C⟩ and KL(P ‖ a⊗b) of the plan of slot g (solver.cpp, primal_cost: one x-rows pass with
  // V = g − ḡ, ḡ the b-weighted mean, and the cost).
  [[nodiscard]] virtual std::optional<primal_summary> primal_terms(double /*eps*/, bool /*unbalanced_rows*/) const {
    return std::nullopt;
  }

  // A block of iterations between two reads: runs iteration(0), …, iteration(count − 1) in order,
  // each once, on the calling thread, before returning. The iterations may only call softmin,
  // swap_potentials and copy_potential — no read (take_error, read_potential, plan_rows) and no
  // upload (write_potential) — so that a backend may record the block and replay it without the
  // host: the CUDA backend launches a recorded block as one CUDA graph (cuda_backend.cu). The work
  // may still be in flight on return, like that of softmin; the next read waits for it.
  // This default runs the iterations as they come (the CPU backend).
  virtual void run_block(int count, const std::function<void(int)>& iteration) {
    for (int i = 0; i < count; ++i) iteration(i);
  }
};

}  // namespace flashsinkhorn::detail
