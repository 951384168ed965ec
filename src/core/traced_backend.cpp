#include "core/traced_backend.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>

#include "core/matrix_store.hpp"

namespace flashsinkhorn::detail {
namespace {

const char* side_name(side s) { return s == side::x ? "x" : "y"; }
std::string pass_name(side rows, side keys) { return std::string(side_name(rows)) + "<-" + side_name(keys); }

// Times calls and prints a line each; one per traced backend, shared with its store, so that "host
// before" is the gap since whichever traced call returned last.
class call_timer {
 public:
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

 private:
  // When the last traced call returned: the gap to the next one is the caller's host work (and
  // untraced calls: single half-steps, copies, swaps).
  mutable std::chrono::steady_clock::time_point last_end_ = std::chrono::steady_clock::now();
};

// The backend's matrix store (the HVP's O(n·d) arrays and their passes), its operations timed.
// On the CUDA backend only the reads to the host (read, column, row_dots, first_nonfinite,
// read_into to host memory) wait for the device; the rest are marked "(enqueue)".
class traced_matrix_store final : public matrix_store {
 public:
  traced_matrix_store(matrix_store& inner, const call_timer& timer, bool enqueues)
      : inner_(inner), timer_(timer), enqueue_(enqueues ? " (enqueue)" : "") {}

  void write(int id, const std::vector<double>& values, std::int64_t rows, std::int64_t cols) override {
    timer_.timed("store write" + enqueue_, [&] { inner_.write(id, values, rows, cols); });
  }
  void write_view(int id, const matrix_view& view, const std::string& name) override {
    timer_.timed("store write_view" + enqueue_, [&] { inner_.write_view(id, view, name); });
  }
  void read_into(int id, const mutable_matrix_view& out, const std::string& name) const override {
    timer_.timed("store read_into", [&] { inner_.read_into(id, out, name); });
  }
  [[nodiscard]] std::int64_t first_nonfinite(int id) const override {
    std::int64_t index = -1;
    timer_.timed("store first_nonfinite", [&] { index = inner_.first_nonfinite(id); });
    return index;
  }
  void load_points(int id, side s) override {
    timer_.timed(std::string("store load_points ") + side_name(s) + enqueue_, [&] { inner_.load_points(id, s); });
  }
  void round_to_operands(int id) override {
    timer_.timed("store round_to_operands" + enqueue_, [&] { inner_.round_to_operands(id); });
  }
  [[nodiscard]] std::vector<double> read(int id) const override {
    std::vector<double> values;
    timer_.timed("store read", [&] { values = inner_.read(id); });
    return values;
  }
  [[nodiscard]] std::vector<double> column(int id, std::int64_t column) const override {
    std::vector<double> values;
    timer_.timed("store column", [&] { values = inner_.column(id, column); });
    return values;
  }
  [[nodiscard]] std::int64_t rows(int id) const override { return inner_.rows(id); }
  [[nodiscard]] std::int64_t cols(int id) const override { return inner_.cols(id); }
  void combine(int target, std::int64_t column, std::int64_t width, bool accumulate,
               const std::vector<matrix_term>& terms) override {
    timer_.timed("store combine" + enqueue_, [&] { inner_.combine(target, column, width, accumulate, terms); });
  }
  [[nodiscard]] std::vector<double> row_dots(int a, std::int64_t a_column, int b, std::int64_t b_column,
                                             std::int64_t width) const override {
    std::vector<double> dots;
    timer_.timed("store row_dots", [&] { dots = inner_.row_dots(a, a_column, b, b_column, width); });
    return dots;
  }
  void plan_rows(const plan_rows_request& request, int values, int out) override {
    timer_.timed("store plan_rows " + pass_name(request.rows, request.keys) + " k=" + std::to_string(inner_.cols(values)) +
                     enqueue_,
                 [&] { inner_.plan_rows(request, values, out); });
  }
  void plan_quadratic_rows(const plan_quadratic_request& request, int directions, int values, int key_directions,
                           int out) override {
    timer_.timed("store plan_quadratic_rows " + pass_name(request.rows, request.keys) +
                     " k=" + std::to_string(inner_.cols(values)) + enqueue_,
                 [&] { inner_.plan_quadratic_rows(request, directions, values, key_directions, out); });
  }

 private:
  matrix_store& inner_;
  const call_timer& timer_;
  std::string enqueue_;
};

class traced_backend final : public backend {
 public:
  explicit traced_backend(std::unique_ptr<backend> inner) : inner_(std::move(inner)) {
    if (matrix_store* store = inner_->matrices())
      store_ = std::make_unique<traced_matrix_store>(*store, timer_, inner_->name() != "cpu");
  }

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
  [[nodiscard]] matrix_store* matrices() const override { return store_.get(); }
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
  template <class... Args>
  void timed(Args&&... args) const {
    timer_.timed(std::forward<Args>(args)...);
  }

  std::unique_ptr<backend> inner_;
  call_timer timer_;
  std::unique_ptr<traced_matrix_store> store_;  // over inner_'s store, if it has one
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
