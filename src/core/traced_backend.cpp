#include "core/traced_backend.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

namespace flashsinkhorn::detail {
namespace {

const char* side_name(side s) { return s == side::x ? "x" : "y"; }

class traced_backend final : public backend {
 public:
  explicit traced_backend(std::unique_ptr<backend> inner) : inner_(std::move(inner)) {}

  [[nodiscard]] std::string name() const override { return inner_->name(); }

  // The half-steps are not traced one by one (thousands per solve): run_block and take_error are.
  void softmin(const softmin_step& step) override { inner_->softmin(step); }
  double take_error() override {
    double error = 0;
    timed("take_error", [&] { error = inner_->take_error(); });
    return error;
  }
  void write_potential(slot s, const std::vector<double>& values) override {
    timed("write_potential", [&] { inner_->write_potential(s, values); });
  }
  [[nodiscard]] std::vector<double> read_potential(slot s) const override {
    std::vector<double> values;
    timed("read_potential", [&] { values = inner_->read_potential(s); });
    return values;
  }
  void copy_potential(slot dst, slot src) override { inner_->copy_potential(dst, src); }
  void swap_potentials(slot a, slot b) override { inner_->swap_potentials(a, b); }
  [[nodiscard]] plan_rows_result plan_rows(const plan_rows_request& request) const override {
    plan_rows_result result;
    timed("plan_rows " + pass_name(request.rows, request.keys) + " k=" + std::to_string(request.k) +
              (request.want_cost ? " +cost" : ""),
          [&] { result = inner_->plan_rows(request); });
    return result;
  }
  [[nodiscard]] plan_rows_result plan_quadratic_rows(const plan_quadratic_request& request) const override {
    plan_rows_result result;
    timed("plan_quadratic_rows " + pass_name(request.rows, request.keys) + " k=" + std::to_string(request.k) +
              (request.key_directions != nullptr ? " +key directions" : ""),
          [&] { result = inner_->plan_quadratic_rows(request); });
    return result;
  }
  [[nodiscard]] bool supports_key_directions() const override { return inner_->supports_key_directions(); }
  // (the store's operations are not traced; its passes run inside the backend)
  [[nodiscard]] matrix_store* matrices() const override { return inner_->matrices(); }
  void point_gradient(const point_gradient_request& request) override {
    timed("point_gradient " + pass_name(request.rows, request.keys) + " (enqueue)",
          [&] { inner_->point_gradient(request); });
  }
  void read_point_gradient(side s, const mutable_matrix_view& out) const override {
    timed(std::string("read_point_gradient ") + side_name(s), [&] { inner_->read_point_gradient(s, out); });
  }
  [[nodiscard]] std::optional<projected_cg_outcome> solve_schur(const schur_system& system,
                                                                const std::vector<double>& rhs,
                                                                const std::vector<double>& diagonal,
                                                                const projected_cg_settings& settings) const override {
    std::optional<projected_cg_outcome> outcome;
    timed(
        "solve_schur", [&] { outcome = inner_->solve_schur(system, rhs, diagonal, settings); },
        [&] { return outcome ? " (" + std::to_string(outcome->iterations) + " iterations)" : std::string(" (host)"); });
    return outcome;
  }
  [[nodiscard]] bool read_potential_into(slot s, const mutable_vector_view& out) const override {
    bool done = false;
    timed("read_potential_into", [&] { done = inner_->read_potential_into(s, out); });
    return done;
  }
  [[nodiscard]] std::optional<std::vector<double>> weighted_dual_terms(const std::vector<dual_term_request>& terms,
                                                                       double eps) const override {
    std::optional<std::vector<double>> values;
    timed("weighted_dual_terms", [&] { values = inner_->weighted_dual_terms(terms, eps); });
    return values;
  }
  [[nodiscard]] std::optional<primal_summary> primal_terms(double eps, bool unbalanced_rows) const override {
    std::optional<primal_summary> terms;
    timed("primal_terms", [&] { terms = inner_->primal_terms(eps, unbalanced_rows); });
    return terms;
  }
  void run_block(int count, const std::function<void(int)>& iteration) override {
    timed("run_block of " + std::to_string(count) + " (enqueue)", [&] { inner_->run_block(count, iteration); });
  }

 private:
  static std::string pass_name(side rows, side keys) { return std::string(side_name(rows)) + "<-" + side_name(keys); }

  template <class Call>
  void timed(const std::string& what, Call&& call) const {
    timed(what, std::forward<Call>(call), [] { return std::string(); });
  }
  template <class Call, class Suffix>
  void timed(const std::string& what, Call&& call, Suffix&& suffix) const {
    using clock = std::chrono::steady_clock;
    const auto start = clock::now();
    call();
    const auto end = clock::now();
    const double ms = std::chrono::duration<double, std::milli>(end - start).count();
    const double host_ms = std::chrono::duration<double, std::milli>(start - last_end_).count();
    std::fprintf(stderr, "flashsinkhorn trace: %s%s  %.3f ms  (host %.3f ms before)\n", what.c_str(),
                 suffix().c_str(), ms, host_ms);
    last_end_ = end;
  }

  std::unique_ptr<backend> inner_;
  // When the last traced call returned: the gap to the next one is the caller's host work (and
  // untraced calls: single half-steps, copies, swaps).
  mutable std::chrono::steady_clock::time_point last_end_ = std::chrono::steady_clock::now();
};

}  // namespace

std::unique_ptr<backend> make_traced_backend(std::unique_ptr<backend> inner) {
  return std::make_unique<traced_backend>(std::move(inner));
}

bool tracing_requested() {
  const char* value = std::getenv("FLASHSINKHORN_TRACE");
  return value != nullptr && *value != '\0' && std::string(value) != "0";
}

}  // namespace flashsinkhorn::detail
