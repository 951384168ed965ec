// flashsinkhorn::solver: validation and preparation, backend choice, the loop, and the streamed
// quantities after the solve (plan products, barycentric map, gradients, primal cost).
#include "flashsinkhorn/solver.hpp"

#include <chrono>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>
#include <string>

#include "core/backend.hpp"
#include "core/dual_value.hpp"
#include "core/epsilon_schedule.hpp"
#include "core/joint_hvp.hpp"
#include "core/normalisation_chain_rules.hpp"
#include "core/point_hvp.hpp"
#include "core/potential_vjp.hpp"
#include "core/prepare.hpp"
#include "core/shortfall_forecast.hpp"
#include "core/solver_loop.hpp"
#include "core/traced_backend.hpp"
#include "core/validate.hpp"
#include "core/view_io.hpp"
#include "cpu/cpu_backend.hpp"
#include "flashsinkhorn/error.hpp"
#include "math/point_gradient.hpp"
#ifdef FLASHSINKHORN_HAS_CUDA
#include "cuda/cosine_gradient.hpp"
#include "cuda/cuda_backend.hpp"
#include "cuda/device_memory_pool.hpp"
#include "cuda/device_value.hpp"
#include "cuda/host_path_copies.hpp"
#endif

namespace flashsinkhorn {
namespace detail {
namespace {

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point start) {
  return std::chrono::duration<double>(clock_type::now() - start).count();
}

std::optional<double> squared(const std::optional<double>& reach) {
  if (!reach) return std::nullopt;
  return *reach * *reach;
}

bool wants_cuda(const options& o) {
  return o.device == device_kind::cuda || (o.device == device_kind::automatic && cuda_available());
}

// Throws unless the CUDA backend can run on o.cuda_device.
void require_cuda_device(const options& o) {
#ifdef FLASHSINKHORN_HAS_CUDA
  if (cuda_device_count() == 0) throw unsupported("device cuda was requested but no CUDA device is visible");
  if (o.cuda_device >= cuda_device_count()) {
    throw invalid_argument("cuda_device " + std::to_string(o.cuda_device) + " does not exist (" +
                           std::to_string(cuda_device_count()) + " CUDA devices visible)");
  }
#else
  (void)o;
  throw unsupported("device cuda was requested but this build of flashsinkhorn has no CUDA backend");
#endif
}

std::unique_ptr<backend> make_untraced_backend(const prepared_problem& prepared, const options& o,
                                               transfer_statistics* transfers) {
  if (!wants_cuda(o)) return make_cpu_backend(prepared, o.precision, o.cpu_threads);
  require_cuda_device(o);
#ifdef FLASHSINKHORN_HAS_CUDA
  return make_cuda_backend(prepared, o.precision, o.cuda_device, nullptr, transfers);
#else
  (void)transfers;
  return nullptr;  // not reached: require_cuda_device threw
#endif
}

// FLASHSINKHORN_TRACE=1: every backend call timed on stderr (core/traced_backend.hpp).
std::unique_ptr<backend> traced_if_requested(std::unique_ptr<backend> compute) {
  if (tracing_requested()) return make_traced_backend(std::move(compute));
  return compute;
}

std::unique_ptr<backend> make_backend(const prepared_problem& prepared, const options& o,
                                      transfer_statistics* transfers) {
  return traced_if_requested(make_untraced_backend(prepared, o, transfers));
}

// Whether the problem is read where it lives, on the device (solver.hpp, "CUDA inputs"): X in CUDA
// memory, the CUDA backend, no label cost. (prepare_on_device checks Y, a, b and the warm start.)
bool prepares_on_device(const problem& p, const options& o) {
  return p.x.space == memory_space::cuda && wants_cuda(o) && p.labels.empty();
}

#ifdef FLASHSINKHORN_HAS_CUDA
bool any_in_cuda_memory(const problem& p) {
  for (memory_space space : {p.x.space, p.y.space, p.initial_f.space, p.initial_g.space}) {
    if (space == memory_space::cuda) return true;
  }
  return (!p.a.empty() && p.a.space == memory_space::cuda) || (!p.b.empty() && p.b.space == memory_space::cuda);
}
#endif

}  // namespace

class solver_state {
 public:
  solver_state(const problem& p, const options& o) : options_(o), eps_(p.eps), problem_(p) {
    const auto start = clock_type::now();
    if (prepares_on_device(p, o)) {
      prepare_on_device_inputs(p, o);
    } else {
      const problem* host = &p;
#ifdef FLASHSINKHORN_HAS_CUDA
      if (any_in_cuda_memory(p)) {  // a path that reads the host (solver.hpp): the copy, counted
        validate_arguments(p, o);
        host_copy_ = copy_problem_to_host(p, o.cuda_stream, &transfers_);
        host = &host_copy_.view;
      }
#endif
      inputs_ = prepare(*host, o);
      host_inputs_ready_ = true;
      compute_ = make_backend(inputs_.kernel, o, &transfers_);
    }
    if (!inputs_.initial_f.empty()) {
      compute_->write_potential(slot::f, inputs_.initial_f);
      compute_->write_potential(slot::g, inputs_.initial_g);
      warm_ = true;
    }
    prepare_seconds_ = seconds_since(start);
  }

  result solve() { return solve_with(nullptr); }
  result solve_into(const potential_views& out) {
    check_potential_view(out.f, count(side::x), "f");
    check_potential_view(out.g, count(side::y), "g");
    if (out.cost.data != nullptr) check_potential_view(out.cost, 1, "cost");
    return solve_with(&out);
  }

  // The host copy of the prepared inputs (prepare()), made on first use when the problem was
  // prepared on the device: the caller's arrays are copied to the host once (counted).
  const prepared_inputs& host_inputs() const {
    if (!host_inputs_ready_) {
#ifdef FLASHSINKHORN_HAS_CUDA
      host_copy_ = copy_problem_to_host(problem_, options_.cuda_stream, &transfers_);
      inputs_ = prepare(host_copy_.view, options_);
#endif
      host_inputs_ready_ = true;
    }
    return inputs_;
  }

  [[nodiscard]] transfer_statistics transfers() const { return transfers_; }

 private:
  // The CUDA backend prepares the caller's arrays where they are; the solver keeps the scalars and
  // the shapes (inputs_ without its vectors until host_inputs()).
  void prepare_on_device_inputs(const problem& p, const options& o) {
    validate_arguments(p, o);
    require_cuda_device(o);
#ifdef FLASHSINKHORN_HAS_CUDA
    device_preparation_summary summary;
    compute_ = traced_if_requested(make_cuda_backend_on_device_inputs(p, o, &transfers_, summary));
    inputs_.dim = p.x.cols;
    inputs_.kernel.x.count = p.x.rows;
    inputs_.kernel.y.count = p.y.rows;
    inputs_.kernel.x.dim = inputs_.kernel.y.dim = p.x.cols;
    inputs_.kernel.cost_scale = summary.cost_scale;
    inputs_.mass_a = summary.mass_a;
    inputs_.mass_b = summary.mass_b;
    inputs_.diameter = summary.diameter;
    warm_ = summary.warm_start;
    device_inputs_ = true;
#endif
  }

  static void check_potential_view(const mutable_vector_view& view, std::int64_t count, const char* name) {
    if (view.data == nullptr) throw invalid_argument(std::string("solve_into: the output for ") + name + " has no data");
    if (view.size != count) {
      throw invalid_argument(std::string("solve_into: the output for ") + name + " has " + std::to_string(view.size) +
                             " elements, expected " + std::to_string(count));
    }
  }

  // Slot `s` into `out`: in place where the backend can (CUDA memory included), else through a host vector.
  void write_potential_view(slot s, const mutable_vector_view& out, const char* name) const {
    if (out.data == nullptr) return;
    if (compute_->read_potential_into(s, out)) return;
    const std::vector<double> values = compute_->read_potential(s);
#ifdef FLASHSINKHORN_HAS_CUDA
    if (out.space == memory_space::cuda) {  // a backend without in-place reads (traced): through the host, counted
      const mutable_matrix_view column{out.data, out.size, 1, out.stride, out.type, out.space, out.device};
      copy_matrix_to_device(values, column, options_.cuda_stream, &transfers_);
      return;
    }
#endif
    write_vector(out, values, name);
  }

  // The value into `out` (potential_views::cost), where it lives.
  void write_value_view(double value, const mutable_vector_view& out) const {
    if (out.data == nullptr) return;
#ifdef FLASHSINKHORN_HAS_CUDA
    if (out.space == memory_space::cuda) {
      write_value_to_device(value, out, options_.cuda_stream);
      return;
    }
#endif
    write_vector(out, {value}, "cost");
  }

  // The value and the primal terms reduced where the potentials are (backend.hpp); nullopt when the
  // backend does not (then the host computes them).
  std::optional<double> value_on_backend(const loop_config& config) const {
    std::vector<dual_term_request> terms{{slot::f, config.rho_x}, {slot::g, config.rho_y}};
    if (options_.debias) terms.insert(terms.end(), {{slot::f_aa, config.rho_x}, {slot::g_bb, config.rho_y}});
    const std::optional<std::vector<double>> t = compute_->weighted_dual_terms(terms, eps_);  // one read
    if (!t) return std::nullopt;
    return options_.debias ? ((*t)[0] + (*t)[1]) - ((*t)[2] + (*t)[3]) : (*t)[0] + (*t)[1];
  }

 public:
  result solve_with(const potential_views* into) {
    const auto start = clock_type::now();
    loop_config config;
    config.solver = options_.solver;
    if (options_.scaling && !solved_) config.schedule = epsilon_schedule(inputs_.diameter, eps_, *options_.scaling);
    config.eps = eps_;
    config.max_iterations = options_.max_iterations;
    config.tolerance = options_.tolerance;
    config.check_every = options_.check_every;
    config.relaxation = options_.relaxation;
    config.adaptive_relaxation = options_.adaptive_relaxation;
    config.rho_x = squared(options_.reach_x);
    config.rho_y = squared(options_.reach_y);
    config.debias = options_.debias;
    config.warm_start = warm_ || solved_;
    config.on_progress = options_.on_progress;
    const loop_outcome outcome = run_sinkhorn_loop(*compute_, config);
    solved_ = true;
    fell_short_since_solve_ = false;  // a new plan: its products try single precision first again,
    shortfall_foreseen_.reset();      // unless it foresees their fall

    result r;
    r.iterations = outcome.iterations;
    r.marginal_error = outcome.marginal_error;
    r.converged = outcome.converged;
    r.relaxation_fell_back = outcome.relaxation_fell_back;
    r.eps = eps_;
    r.device = compute_->name();
    if (into != nullptr) {
      write_potential_view(slot::f, into->f, "f");
      write_potential_view(slot::g, into->g, "g");
      if (options_.debias) {
        write_potential_view(slot::f_aa, into->f_aa, "f_aa");
        write_potential_view(slot::g_bb, into->g_bb, "g_bb");
      }
    } else {
      r.f = compute_->read_potential(slot::f);
      r.g = compute_->read_potential(slot::g);
      if (options_.debias) {
        r.f_aa = compute_->read_potential(slot::f_aa);
        r.g_bb = compute_->read_potential(slot::g_bb);
      }
    }
    // On the caller's CUDA arrays the value is reduced on the device; else the host computes it from
    // host vectors (read now when solve_into wrote the views).
    const std::optional<double> device_value = device_inputs_ ? value_on_backend(config) : std::nullopt;
    if (device_value) {
      r.cost = *device_value;
    } else {
      std::vector<double> f, g, f_aa, g_bb;
      const bool read = into != nullptr;
      if (read) {
        f = compute_->read_potential(slot::f);
        g = compute_->read_potential(slot::g);
        if (options_.debias) {
          f_aa = compute_->read_potential(slot::f_aa);
          g_bb = compute_->read_potential(slot::g_bb);
        }
      }
      const prepared_inputs& in = host_inputs();
      dual_value_inputs value;
      value.a = &in.kernel.x.weights;
      value.b = &in.kernel.y.weights;
      value.f = read ? &f : &r.f;
      value.g = read ? &g : &r.g;
      value.eps = eps_;
      value.rho_x = config.rho_x;
      value.rho_y = config.rho_y;
      if (options_.debias) {
        value.f_aa = read ? &f_aa : &r.f_aa;
        value.g_bb = read ? &g_bb : &r.g_bb;
      }
      r.cost = dual_value(value);
    }
    // The primal terms: one more pass over the plan, skipped unless asked for (options.hpp).
    r.primal_cost = r.relative_entropy = std::numeric_limits<double>::quiet_NaN();
    if (options_.primal_terms) {
      const primal_summary primal = primal_terms_now(into == nullptr ? &r.g : nullptr);
      r.primal_cost = primal.transport;
      r.relative_entropy = primal.relative_entropy;
    }
    if (!std::isfinite(r.cost) ||
        (options_.primal_terms && (!std::isfinite(r.primal_cost) || !std::isfinite(r.relative_entropy)))) {
      std::string message = "the solve produced a non-finite value (cost ";
      message.append(std::to_string(r.cost)).append(", primal cost ").append(std::to_string(r.primal_cost));
      message.append(", relative entropy ").append(std::to_string(r.relative_entropy)).append("); ε = ");
      message.append(std::to_string(eps_));
      message.append(" is likely too small for the cost scale in this precision — raise eps or use fp64");
      throw error(message);
    }
    if (into != nullptr) write_value_view(r.cost, into->cost);
    r.time.prepare_seconds = prepare_seconds_;
    r.time.solve_seconds = seconds_since(start);
    r.time.total_seconds = r.time.prepare_seconds + r.time.solve_seconds;
    return r;
  }

  // out_i = m_i Σ_j softmax_ij V_j on the `rows` side (P·V for rows = x, Pᵀ·U for rows = y).
  std::vector<double> apply(side rows, const std::vector<double>& values, std::int64_t k) const {
    const plan_rows_result pass = plan_pass(rows, key_slot(rows), values.data(), k, false);
    const std::vector<double> mass = row_masses(rows, row_slot(rows), pass.lse);
    std::vector<double> out(pass.weighted.size());
    for (std::size_t i = 0; i < mass.size(); ++i) {
      for (std::int64_t c = 0; c < k; ++c) out[i * k + c] = mass[i] * pass.weighted[i * k + c];
    }
    return out;
  }

  std::vector<double> barycentric_projection() const {
    return plan_pass(side::x, slot::g, host_inputs().y_input.data(), dim(), false).weighted;
  }

  // ∇ of the value with respect to the points of `rows` (envelope theorem), into `out`:
  //   ∇_i = 2s Σ_j P_ij (p_i − q_j) = 2s·m_i·(p_i − Σ_j softmax_ij q_j)
  // minus the same with the plan of OT(a,a) (resp. OT(b,b)) when debiased, computed and kept by
  // the backend (so a CUDA output view never sees the host); then, for the cosine cost, the chain
  // rule through x̂ = x/‖x‖ on the host:  ∇_x = (I − x̂x̂ᵀ)∇_x̂ / ‖x‖. With a label cost p = [x, c·u_l]:
  // ∇_x is the first d columns of ∇_p (the label coordinates are constants; η = +1 on the features),
  // which is what reading d columns out of the backend's (count, d + r) gradient gives.
  void point_gradient(side rows, const mutable_matrix_view& out, const char* name) const {
    check_output_shape(out, count(rows), dim(), name);
    const double two_s = 2 * inputs_.kernel.cost_scale;
    const bool unbalanced = reach(rows).has_value();
    compute_->point_gradient({rows, other(rows), key_slot(rows), row_slot(rows), eps_, unbalanced, two_s, false});
    if (options_.debias) {
      const slot self = rows == side::x ? slot::f_aa : slot::g_bb;
      compute_->point_gradient({rows, rows, self, self, eps_, unbalanced, -two_s, true});
    }
    if (options_.cost != cost_kind::cosine) {
      compute_->read_point_gradient(rows, out);
      return;
    }
#ifdef FLASHSINKHORN_HAS_CUDA
    if (device_inputs_ && out.space == memory_space::cuda) {  // the chain rule where the points are
      cosine_gradient_on_device(*compute_, rows, rows == side::x ? problem_.x : problem_.y, out, options_.cuda_stream);
      return;
    }
#endif
    const std::int64_t d = dim();
    std::vector<double> grad(static_cast<std::size_t>(count(rows) * d));
    compute_->read_point_gradient(rows, host_matrix(grad.data(), count(rows), d));
    const prepared_inputs& in = host_inputs();
    through_cosine_normalisation(grad, rows == side::x ? in.x_input : in.y_input,
                                 rows == side::x ? in.x_norms : in.y_norms, d);
#ifdef FLASHSINKHORN_HAS_CUDA
    if (out.space == memory_space::cuda) {  // the chain rule ran on the host: its result goes back (counted)
      check_output_shape(out, count(rows), d, name);
      copy_matrix_to_device(grad, out, options_.cuda_stream, &transfers_);
      return;
    }
#endif
    write_matrix(out, grad, count(rows), d, name);
  }

  // ∂value/∂w for the weights of `rows` (balanced sides only). With normalised weights w̃ = w/Σw:
  //   ∂/∂w_k = (h_k − ⟨w̃, h⟩)/Σw,  h = T(key potential) (− the debiasing potential),
  // which is also free of the additive gauge of h.
  std::vector<double> weight_gradient(side rows) const {
    if ((rows == side::x ? options_.reach_x : options_.reach_y).has_value()) {
      throw unsupported("weight gradients are implemented for balanced sides only (no reach on that side)");
    }
    const plan_rows_result pass = plan_pass(rows, key_slot(rows), nullptr, 0, false);
    std::vector<double> h(pass.lse.size());
    for (std::size_t i = 0; i < h.size(); ++i) h[i] = -eps_ * pass.lse[i];
    if (options_.debias) {
      const std::vector<double> self = compute_->read_potential(rows == side::x ? slot::f_aa : slot::g_bb);
      for (std::size_t i = 0; i < h.size(); ++i) h[i] -= self[i];
    }
    if (options_.normalize_weights)
      through_weight_normalisation(h, host_cloud(rows).weights, rows == side::x ? inputs_.mass_a : inputs_.mass_b);
    return h;
  }

  // d of X and Y as given; the kernels' points may have more coordinates (label cost).
  [[nodiscard]] std::int64_t dim() const { return inputs_.dim; }
  [[nodiscard]] std::int64_t count(side s) const { return s == side::x ? inputs_.kernel.x.count : inputs_.kernel.y.count; }
  [[nodiscard]] std::string device_name() const { return compute_->name(); }
  void require_solved(const char* what) const {
    if (!solved_) throw invalid_argument(std::string(what) + " needs the potentials: call solve() first");
  }
  // What core/potential_vjp.cpp reads after a solve; single-precision solves add their float64
  // replica (core/float64_replica.hpp) and whether a product of this solve already fell short.
  [[nodiscard]] potential_vjp_context vjp_context() const {
    potential_vjp_context context{*compute_, host_inputs(), eps_, options_};
    if (options_.precision != precision::fp64) {
      context.float64_backend = [this]() -> backend& { return float64_replica_backend(); };
      context.start_in_float64 = fell_short_since_solve_;
      context.foresees_shortfall = [this]() { return shortfall_foreseen(); };
    }
    return context;
  }

  // Whether this solve's plan foresees its single-precision products' fall (shortfall_forecast.hpp):
  // one float64 pass on the replica, the first time a product of the solve asks.
  [[nodiscard]] bool shortfall_foreseen() const {
    if (!shortfall_foreseen_)
      shortfall_foreseen_ = shortfall_forecast_enabled() &&
                            single_match_share(replica_holding_potentials(), host_inputs().kernel, eps_) >=
                                kForeseenShortfallShare;
    return *shortfall_foreseen_;
  }

  // The float64 backend of the kind that solved, holding the current potentials (below). Being
  // asked for it means a product fell short in single precision: later ones of this solve start here.
  [[nodiscard]] backend& float64_replica_backend() const {
    backend& replica = replica_holding_potentials();
    fell_short_since_solve_ = true;
    return replica;
  }

  // The float64 backend of the kind that solved (CPU or CUDA) over the same inputs — CUDA inputs
  // prepared again where they are — made on first use and kept (its prepared clouds and scratch
  // serve the later products), handed back holding the current potentials f and g.
  [[nodiscard]] backend& replica_holding_potentials() const {
    if (!replica_) {
      options o = options_;
      o.precision = precision::fp64;
#ifdef FLASHSINKHORN_HAS_CUDA
      if (device_inputs_) {
        device_preparation_summary summary;
        replica_ = traced_if_requested(make_cuda_backend_on_device_inputs(problem_, o, &transfers_, summary));
      }
#endif
      if (!replica_) {
        o.device = compute_->name() == "cpu" ? device_kind::cpu : device_kind::cuda;
        replica_ = make_backend(host_inputs().kernel, o, &transfers_);
      }
    }
    replica_->write_potential(slot::f, compute_->read_potential(slot::f));
    replica_->write_potential(slot::g, compute_->read_potential(slot::g));
    return *replica_;
  }

 private:
  // A prepared cloud with its vectors (the host copy, made on first use for CUDA inputs).
  const prepared_cloud& host_cloud(side s) const {
    const prepared_inputs& in = host_inputs();
    return s == side::x ? in.kernel.x : in.kernel.y;
  }
  static slot key_slot(side rows) { return rows == side::x ? slot::g : slot::f; }
  static slot row_slot(side rows) { return rows == side::x ? slot::f : slot::g; }
  const std::optional<double>& reach(side s) const { return s == side::x ? options_.reach_x : options_.reach_y; }

  plan_rows_result plan_pass(side rows, slot key, const double* values, std::int64_t k, bool want_cost) const {
    return compute_->plan_rows(plan_pass_request(rows, key, eps_, values, k, want_cost));
  }

  // Row masses of the plan: w_i on a balanced side (rows renormalised), w_i·exp((f_i − T_i)/ε)
  // = w_i·exp(f_i/ε + lse_i) on a side with reach, where the damped f differs from T(g).
  std::vector<double> row_masses(side rows, slot row_potential, const std::vector<double>& lse) const {
    std::vector<double> mass = host_cloud(rows).weights;
    if (!reach(rows)) return mass;
    const std::vector<double> f = compute_->read_potential(row_potential);
    for (std::size_t i = 0; i < mass.size(); ++i) mass[i] = math::plan_row_mass(mass[i], true, f[i], eps_, lse[i]);
    return mass;
  }

  // ⟨P, C⟩ and KL(P ‖ a⊗b) of the current plan: reduced on the device for the caller's CUDA arrays
  // (backend primal_terms), else on the host from g (`g`, or read from the backend when null).
  primal_summary primal_terms_now(const std::vector<double>* g) const {
    if (device_inputs_) {
      if (const std::optional<primal_summary> terms = compute_->primal_terms(eps_, options_.reach_x.has_value())) {
        return *terms;
      }
    }
    if (g != nullptr) return primal_cost(*g);
    return primal_cost(compute_->read_potential(slot::g));
  }

 public:
  objective_terms primal_objective() const {
    require_solved("primal_objective");
    const primal_summary terms = primal_terms_now(nullptr);
    if (!std::isfinite(terms.transport) || !std::isfinite(terms.relative_entropy)) {
      throw error("primal_objective: the plan's primal terms are not finite (primal cost " +
                  std::to_string(terms.transport) + ", relative entropy " + std::to_string(terms.relative_entropy) +
                  "); ε = " + std::to_string(eps_) + " is likely too small for the cost scale in this precision");
    }
    return {terms.transport, terms.relative_entropy};
  }

 private:
  // Both terms of the primal objective from one plan pass with V = g (k = 1) and want_cost.
  // With softmax_ij = softmax_j((g_j − C_ij)/ε + log b_j), P_ij = m_i·softmax_ij and
  // log(P_ij/(a_i b_j)) = log(m_i/a_i) + (g_j − C_ij)/ε − lse_i:
  //   ⟨P, C⟩        = Σ_i m_i·⟨softmax_i, C_i⟩
  //   KL(P ‖ a⊗b)   = Σ_i m_i·[log(m_i/a_i) − lse_i + (⟨softmax_i, g⟩ − ⟨softmax_i, C_i⟩)/ε]
  //                   − Σ_i m_i + Σ_i a_i·Σ_j b_j.
  // Rows with m_i = 0 (a_i = 0) add nothing (0·log 0 = 0); keys with b_j = 0 have softmax 0.
  // g enters shifted by its b-weighted mean ḡ: the softmax sums to 1, so ⟨softmax_i, g − ḡ⟩ + ḡ
  // is the same number, with operands of the size of g's spread rather than of g's gauge (the pass
  // may round V to fp32 or tf32).
  primal_summary primal_cost(const std::vector<double>& g) const {
    const std::vector<double>& b = host_cloud(side::y).weights;
    const double b_mass = std::accumulate(b.begin(), b.end(), 0.0);
    const double shift = std::inner_product(b.begin(), b.end(), g.begin(), 0.0) / b_mass;
    std::vector<double> shifted(g.size());
    for (std::size_t j = 0; j < g.size(); ++j) shifted[j] = g[j] - shift;
    const plan_rows_result pass = plan_pass(side::x, slot::g, shifted.data(), 1, true);
    const std::vector<double> mass = row_masses(side::x, slot::f, pass.lse);
    const std::vector<double>& a = host_cloud(side::x).weights;
    primal_summary terms;
    double plan_mass = 0;
    for (std::size_t i = 0; i < mass.size(); ++i) {
      if (mass[i] == 0) continue;
      terms.transport += mass[i] * pass.cost[i];
      const double mean_g = pass.weighted[i] + shift;
      terms.relative_entropy += mass[i] * (std::log(mass[i] / a[i]) - pass.lse[i] + (mean_g - pass.cost[i]) / eps_);
      plan_mass += mass[i];
    }
    const double product_mass = std::accumulate(a.begin(), a.end(), 0.0) * b_mass;
    terms.relative_entropy += product_mass - plan_mass;
    return terms;
  }

  options options_;
  double eps_;
  problem problem_;  // the caller's views (solver.hpp: valid while the solver lives)
  // The prepared inputs: complete when prepared on the host; for CUDA inputs prepared on the device,
  // the shapes and scalars only until host_inputs() fills in the rest.
  mutable prepared_inputs inputs_;
  mutable bool host_inputs_ready_ = false;
  bool device_inputs_ = false;  // prepared on the device (prepares_on_device)
  mutable transfer_statistics transfers_;
#ifdef FLASHSINKHORN_HAS_CUDA
  mutable host_copy_of_problem host_copy_;  // the host copy of CUDA inputs, when a path needed it
#endif
  std::unique_ptr<backend> compute_;
  // Single-precision solves: the float64 replica of the products that fall short
  // (float64_replica_backend), and whether one did since the last solve.
  mutable std::unique_ptr<backend> replica_;
  mutable bool fell_short_since_solve_ = false;
  mutable std::optional<bool> shortfall_foreseen_;  // this solve's forecast, once a product asked
  bool warm_ = false;
  bool solved_ = false;
  double prepare_seconds_ = 0;
};

}  // namespace detail

using detail::side;

solver::solver(const problem& p, const options& o) : state_(std::make_unique<detail::solver_state>(p, o)) {}
solver::~solver() = default;
solver::solver(solver&&) noexcept = default;
solver& solver::operator=(solver&&) noexcept = default;

result solver::solve() { return state_->solve(); }

result solver::solve_into(const potential_views& out) { return state_->solve_into(out); }

transfer_statistics solver::transfers() const { return state_->transfers(); }

namespace {

// out = P·V (rows = x) or Pᵀ·U (rows = y); the values live on the other side.
void apply_on_side(const detail::solver_state& state, side rows, const matrix_view& values,
                   const mutable_matrix_view& out, const char* operation, const char* value_name) {
  state.require_solved(operation);
  const side keys = detail::other(rows);
  if (values.rows != state.count(keys)) {
    throw invalid_argument(std::string(operation) + ": " + value_name + " has " + std::to_string(values.rows) +
                           " rows but " + (keys == side::x ? "X" : "Y") + " has " + std::to_string(state.count(keys)) +
                           " points");
  }
  const std::vector<double> host = detail::read_matrix(values, value_name);
  detail::validate_points(host, values.cols, value_name);
  detail::write_matrix(out, state.apply(rows, host, values.cols), state.count(rows), values.cols, operation);
}

}  // namespace

void solver::apply_plan(matrix_view v, mutable_matrix_view out) const {
  apply_on_side(*state_, side::x, v, out, "apply_plan", "V");
}

void solver::apply_plan_transpose(matrix_view u, mutable_matrix_view out) const {
  apply_on_side(*state_, side::y, u, out, "apply_plan_transpose", "U");
}

void solver::barycentric_projection(mutable_matrix_view out) const {
  state_->require_solved("barycentric_projection");
  detail::write_matrix(out, state_->barycentric_projection(), state_->count(side::x), state_->dim(),
                       "barycentric_projection");
}

void solver::gradient_x(mutable_matrix_view out) const {
  state_->require_solved("gradient_x");
  state_->point_gradient(side::x, out, "gradient_x");
}

void solver::gradient_y(mutable_matrix_view out) const {
  state_->require_solved("gradient_y");
  state_->point_gradient(side::y, out, "gradient_y");
}

void solver::gradient_a(mutable_vector_view out) const {
  state_->require_solved("gradient_a");
  detail::write_vector(out, state_->weight_gradient(side::x), "gradient_a");
}

void solver::gradient_b(mutable_vector_view out) const {
  state_->require_solved("gradient_b");
  detail::write_vector(out, state_->weight_gradient(side::y), "gradient_b");
}

potential_vjp_report solver::potential_vjp(vector_view df, vector_view dg, const potential_vjp_outputs& out,
                                           const potential_vjp_options& settings) const {
  state_->require_solved("potential_vjp");
  return detail::potential_vjp(state_->vjp_context(), df, dg, out, settings);
}

hvp_report solver::hvp_x(matrix_view direction, mutable_matrix_view out, const hvp_options& settings) const {
  state_->require_solved("hvp_x");
  return detail::point_hvp(state_->vjp_context(), side::x, direction, out, settings);
}

hvp_report solver::hvp_y(matrix_view direction, mutable_matrix_view out, const hvp_options& settings) const {
  state_->require_solved("hvp_y");
  return detail::point_hvp(state_->vjp_context(), side::y, direction, out, settings);
}

hvp_report solver::hvp_xy(matrix_view direction_x, matrix_view direction_y, mutable_matrix_view out_x,
                          mutable_matrix_view out_y, const hvp_options& settings) const {
  state_->require_solved("hvp_xy");
  return detail::joint_hvp(state_->vjp_context(), direction_x, direction_y, out_x, out_y, settings);
}

hvp_report solver::hvp_self(matrix_view direction, mutable_matrix_view out, const hvp_options& settings) const {
  state_->require_solved("hvp_self");
  return detail::self_hvp(state_->vjp_context(), direction, out, settings);
}

objective_terms solver::primal_objective() const { return state_->primal_objective(); }

std::string solver::device_name() const { return state_->device_name(); }

result solve(const problem& p, const options& o) { return solver(p, o).solve(); }

std::string version() { return FLASHSINKHORN_VERSION; }

bool cuda_available() noexcept {
#ifdef FLASHSINKHORN_HAS_CUDA
  return detail::cuda_device_count() > 0;
#else
  return false;
#endif
}

void release_cached_device_memory() {
#ifdef FLASHSINKHORN_HAS_CUDA
  if (detail::cuda_device_count() > 0) detail::release_device_pools();
#endif
}

device_memory_statistics device_memory(int device) {
  if (device < 0) throw invalid_argument("device_memory: device must be >= 0, got " + std::to_string(device));
#ifdef FLASHSINKHORN_HAS_CUDA
  if (device < detail::cuda_device_count()) {
    const detail::pool_statistics s = detail::device_pool_statistics(device);
    return {s.in_use, s.peak_in_use, s.reserved};
  }
#endif
  return {};
}

void reset_peak_device_memory(int device) {
  if (device < 0) throw invalid_argument("reset_peak_device_memory: device must be >= 0, got " + std::to_string(device));
#ifdef FLASHSINKHORN_HAS_CUDA
  if (device < detail::cuda_device_count()) detail::reset_pool_peak(device);
#endif
}

}  // namespace flashsinkhorn
