// The entry point: a solver binds a problem to a backend (CPU or CUDA), solves it, and then
// streams everything that touches the plan P without ever forming it.
//
//   flashsinkhorn::solver s(problem, options);
//   flashsinkhorn::result r = s.solve();
//   s.gradient_x(out);   // ∇_X of r.cost, one streamed pass
//
// The plan used after a solve is that of the final potentials with the rows renormalised from g
// (f recomputed as T_f(g), FlashAttention's online softmax): P_ij = m_i·softmax_j((g_j − C_ij)/ε
// + log b_j) with row masses m_i = a_i (balanced) or a_i·exp((f_i − T_f(g)_i)/ε) (unbalanced).
// At convergence this is the optimal plan; before it, it is the plan whose rows are exact.
#pragma once

#include <memory>
#include <string>

#include "flashsinkhorn/array_view.hpp"
#include "flashsinkhorn/hessian.hpp"
#include "flashsinkhorn/options.hpp"
#include "flashsinkhorn/potential_vjp.hpp"
#include "flashsinkhorn/problem.hpp"
#include "flashsinkhorn/result.hpp"
#include "flashsinkhorn/transfer_statistics.hpp"

namespace flashsinkhorn {

namespace detail {
class solver_state;
}

// Where solver::solve_into writes the potentials: f (n,) and g (m,), and f_aa (n,), g_bb (m,) of a
// debiased solve (left empty: not written). `cost` (1,), when given, receives result::cost in its
// dtype, in place like the potentials (on a GPU: stored there in the order of the caller's stream,
// as a kernel argument, not a copy), so that a caller whose outputs live on the device gets the value
// there too.
struct potential_views {
  mutable_vector_view f, g, f_aa, g_bb, cost;
};

// CUDA inputs. When X and Y (and a, b when given) are views of CUDA memory and the CUDA backend
// runs, the solver reads them in place on the device, in the order of options::cuda_stream:
// validation, weight normalisation, centring, cosine normalisation, the precision's rounding and
// the norms run there (same checks, same messages), and a warm start's potentials are checked and
// copied into place there. solve_into with CUDA views, gradient_x and
// gradient_y with CUDA outputs then move only scalars between host and device (transfers()).
// These paths copy through the host instead (counted in transfers(), never silently wrong):
//   - the CPU backend, a label cost: the arrays are copied to the host first and prepared there;
//   - solve() (its result holds host vectors), host output views, and, once per solver, the host
//     copy of the inputs that apply_plan, apply_plan_transpose, barycentric_projection, gradient_a,
//     gradient_b, potential_vjp and the Hessian products read.
// Outputs of those host paths must be host views, as before.
class solver {
 public:
  // Validates every argument (throws invalid_argument naming the bad one), picks the backend and
  // prepares the clouds on it (centring, cosine normalisation, conversion to the working precision).
  // The views in `p` must stay valid until the solver is destroyed.
  solver(const problem& p, const options& o);
  ~solver();
  solver(solver&&) noexcept;
  solver& operator=(solver&&) noexcept;
  solver(const solver&) = delete;
  solver& operator=(const solver&) = delete;

  // Runs the Sinkhorn loop. A second call continues from the current potentials (warm start).
  result solve();
  // solve(), with the potentials written into `out` (its views' dtype and stride; host memory, or
  // CUDA memory of the solver's GPU on the CUDA backend) instead of the result's vectors, which stay
  // empty. f and g are required; f_aa, g_bb are written when debiased and given.
  result solve_into(const potential_views& out);

  // out = P·V for V (m, k) → out (n, k), and out = Pᵀ·U for U (n, k) → out (m, k).
  // Views live in host memory (CPU backend) or either memory space (CUDA backend).
  void apply_plan(matrix_view v, mutable_matrix_view out) const;
  void apply_plan_transpose(matrix_view u, mutable_matrix_view out) const;

  // T(x_i) = Σ_j P_ij y_j / Σ_j P_ij, in the coordinates of the input Y. out: (n, d).
  void barycentric_projection(mutable_matrix_view out) const;

  // Gradients of result.cost (debiased and unbalanced included) with respect to the input points
  // and, for balanced problems, the input weights (accounting for normalize_weights).
  void gradient_x(mutable_matrix_view out) const;  // (n, d)
  void gradient_y(mutable_matrix_view out) const;  // (m, d)
  void gradient_a(mutable_vector_view out) const;  // (n,)
  void gradient_b(mutable_vector_view out) const;  // (m,)

  // Implicit differentiation of a loss L(f, g) of result.f, result.g (potential_vjp.hpp): from
  // df = ∂L/∂f (n,) and dg = ∂L/∂g (m,) (an empty view: zeros), writes the requested gradients of L
  // with respect to X, Y, a, b. CG on a Schur complement, every product a streamed plan pass.
  // Balanced problems with positive weights (unbalanced: unsupported); the squared-Euclidean and
  // cosine costs; debiased solves differentiate the OT(a, b) potentials f, g only.
  // Throws invalid_argument before solve(), on bad sizes, non-finite cotangents or no output.
  potential_vjp_report potential_vjp(vector_view df, vector_view dg, const potential_vjp_outputs& out,
                                     const potential_vjp_options& settings = {}) const;

  // Hessian-vector products of result.cost with respect to X (direction (n, d) → out (n, d)) or Y
  // ((m, d) → (m, d)), exact at the solved potentials (hessian.hpp): the full product, or its
  // fixed-potential (indefinite) or implicit (PSD) part (settings.part). Balanced, squared-Euclidean,
  // not debiased (else unsupported). Throws invalid_argument before solve() or on bad shapes.
  // Directions and outputs are host views, or on the CUDA backend also CUDA views of its GPU: then
  // the product reads and writes them in place, and only O(n) vectors cross between host and
  // device per product (the HVP's n·d arrays stay on the GPU: core/matrix_store.hpp).
  hvp_report hvp_x(matrix_view direction, mutable_matrix_view out, const hvp_options& settings = {}) const;
  hvp_report hvp_y(matrix_view direction, mutable_matrix_view out, const hvp_options& settings = {}) const;
  // The joint product with respect to both clouds (hessian.hpp): for A (n, d) on X and B (m, d) on
  // Y, out_x = H_xx·A + H_xy·B (n, d) and out_y = H_yx·A + H_yy·B (m, d) — the derivative of
  // (gradient_x, gradient_y) along (A, B), one CG solve for both. An empty direction is zero; an
  // empty output is not computed (at least one of each). Same support and settings as hvp_x.
  hvp_report hvp_xy(matrix_view direction_x, matrix_view direction_y, mutable_matrix_view out_x,
                    mutable_matrix_view out_y, const hvp_options& settings = {}) const;

  // For a problem whose two sides are the same (X and Y, a and b equal: OT_ε(a, X; a, X)), the
  // Hessian of X ↦ OT_ε(a, X; a, X) along A (n, d) into out (n, d) (hessian.hpp): what the
  // debiasing terms of a Sinkhorn divergence need. invalid_argument for a problem that is not
  // symmetric or a ridge ≠ 0; otherwise as hvp_x.
  hvp_report hvp_self(matrix_view direction, mutable_matrix_view out, const hvp_options& settings = {}) const;

  // ⟨P, C⟩ and KL(P ‖ a⊗b) of the solved plan (result.hpp: primal_cost, relative_entropy), computed
  // now by one streamed pass: what solve() puts in the result unless options::primal_terms is off.
  // Throws invalid_argument before solve(), and error when the terms are not finite.
  [[nodiscard]] objective_terms primal_objective() const;

  [[nodiscard]] std::string device_name() const;

  // The host↔device copies this solver has made so far (construction included); zeros on the CPU.
  [[nodiscard]] transfer_statistics transfers() const;

 private:
  std::unique_ptr<detail::solver_state> state_;
};

// One-shot convenience: solver(p, o).solve().
result solve(const problem& p, const options& o);

// "major.minor.patch"
std::string version();

// True when this build has the CUDA backend and a CUDA device is visible.
bool cuda_available() noexcept;

// The CUDA backend keeps the device memory its solvers free (up to an eighth of each device), one
// pool per device, for the next solver to reuse (as PyTorch's caching allocator does); this gives
// what no solver uses back to the driver (torch.cuda.empty_cache() for flashsinkhorn). No-op
// without CUDA. Throws cuda_error.
void release_cached_device_memory();

// The CUDA backend's device memory on GPU `device`, in bytes (that pool): in use by live solvers,
// the most in use at once since reset_peak_device_memory(device) or the first solver there, and
// held from the driver (in use or cached) — torch.cuda's memory_allocated, max_memory_allocated
// and memory_reserved for flashsinkhorn. Zeros without CUDA or before a solver ran on the device.
// Buffers made while a CUDA graph is being captured are plain cudaMalloc and not counted.
struct device_memory_statistics {
  std::size_t in_use = 0;
  std::size_t peak_in_use = 0;
  std::size_t reserved = 0;
};
device_memory_statistics device_memory(int device = 0);

// Restarts device_memory(device).peak_in_use from the memory in use now. No-op without CUDA.
void reset_peak_device_memory(int device = 0);

}  // namespace flashsinkhorn
