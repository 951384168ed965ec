// CPU backend: row-stationary streaming over (row group × key panel) tiles, as on the GPU.
//   for each group of kGroupRows rows (one OpenMP task):
//     for each key panel of kKeyTile keys:
//       for each register block of kRowBlock rows:  dots = rows·panelᵀ   (score_tile.hpp)
//         scores = c·dots + β  (c = 2s/ε, β_j = h_j/ε + log w_j − s‖q_j‖²/ε; both × log2 e,
//                               so the online LSE runs on exp2, see online_lse.hpp)
//         fold the scores into each row's running LSE (online_lse.hpp)
//   finish each row: T_i = s‖p_i‖² − ε·LSE_i, fused with damping, blending and the error term.
// Plan passes carry a P-weighted accumulator per row (plan_accumulator.hpp); the quadratic pass
// (backend::plan_quadratic_rows) computes a second dot tile u·panelᵀ with the same micro-kernel
// and weights each term by it — two GEMMs per tile, nothing of size d² anywhere. With
// key_directions z the second tile is u·z_panelᵀ against z packed like the key panels.
// Memory: the packed clouds, the potentials and O(kGroupRows·kKeyTile) scratch per thread; and, for
// small clouds, the tiles' dot products kept between passes within a budget (dot_cache.hpp).
#include "cpu/cpu_backend.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "core/view_io.hpp"
#include "cpu/denormals_flushed.hpp"
#include "cpu/dot_cache.hpp"
#include "cpu/online_lse.hpp"
#include "cpu/packed_cloud.hpp"
#include "cpu/plan_accumulator.hpp"
#include "cpu/score_tile.hpp"
#include "flashsinkhorn/error.hpp"
#include "math/point_gradient.hpp"

namespace flashsinkhorn::detail {
namespace {

constexpr std::int64_t kGroupRows = 8 * kRowBlock;  // rows sharing one key panel while it is in L1
constexpr double kLog2e = 1.4426950408889634;
constexpr double kLn2 = 0.69314718055994531;

template <class T>
class cpu_backend final : public backend {
 public:
  cpu_backend(const prepared_problem& problem, precision mode, int threads, byte_budget& dot_cache_budget)
      : cost_scale_(problem.cost_scale), threads_(threads > 0 ? threads : omp_get_max_threads()),
        dot_cache_(dot_cache_budget) {
    clouds_[0] = pack_cloud<T>(problem.x, mode);
    clouds_[1] = pack_cloud<T>(problem.y, mode);
    exact_points_[0] = problem.x.points;
    exact_points_[1] = problem.y.points;
    for (int s = 0; s < kSlotCount; ++s) {
      slots_[s].assign(static_cast<std::size_t>(cloud(side_of(static_cast<slot>(s))).count), T(0));
    }
  }

  [[nodiscard]] std::string name() const override { return "cpu"; }

  void softmin(const softmin_step& step) override {
    const packed_cloud<T>& rows = cloud(step.rows);
    const packed_cloud<T>& keys = cloud(step.keys);
    const std::vector<T> bias = key_bias(keys, step.key_potential, step.eps);
    const T* previous = step.previous ? slots_[index(*step.previous)].data() : nullptr;
    T* out = slots_[index(step.out)].data();
    const double eps = step.eps;
    const dot_pass dots = begin_dots(step.rows, step.keys);
    double error = 0;
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads_for(rows, keys)) reduction(+ : error)
    for (std::int64_t group = 0; group < groups(rows); ++group) {
      const denormals_flushed flushed;
      math::lse_state<double> lse[kGroupRows];
      stream_group(rows, keys, bias, score_scale(eps), group, lse, nullptr, nullptr, dots);
      const std::int64_t first = group * kGroupRows;
      const std::int64_t last = std::min(first + kGroupRows, rows.count);
      for (std::int64_t i = first; i < last; ++i) {
        const double transform = cost_scale_ * static_cast<double>(rows.sq_norms[i]) - eps * kLn2 * lse[i - first].value_log2();
        const double updated = step.damping * transform;
        const double old = previous != nullptr ? static_cast<double>(previous[i]) : 0.0;
        if (step.accumulate_error) error += rows.weights[i] * std::abs(std::expm1((old - updated) / eps));
        out[i] = static_cast<T>((1 - step.blend) * old + step.blend * updated);
      }
    }
    dot_cache_.end(dots.rows, dots.keys, dots.tiles);
    if (step.accumulate_error) error_ += error;
  }

  double take_error() override {
    const double e = error_;
    error_ = 0;
    return e;
  }

  void write_potential(slot s, const std::vector<double>& values) override {
    std::vector<T>& target = slots_[index(s)];
    if (values.empty()) {
      std::fill(target.begin(), target.end(), T(0));
      return;
    }
    if (values.size() != target.size()) throw invalid_argument("potential has the wrong length");
    std::transform(values.begin(), values.end(), target.begin(), [](double v) { return static_cast<T>(v); });
  }

  [[nodiscard]] std::vector<double> read_potential(slot s) const override {
    const std::vector<T>& source = slots_[index(s)];
    return {source.begin(), source.end()};
  }

  void copy_potential(slot dst, slot src) override { slots_[index(dst)] = slots_[index(src)]; }
  void swap_potentials(slot a, slot b) override { slots_[index(a)].swap(slots_[index(b)]); }

  [[nodiscard]] plan_rows_result plan_rows(const plan_rows_request& request) const override {
    const packed_cloud<T>& rows = cloud(request.rows);
    const packed_cloud<T>& keys = cloud(request.keys);
    plan_accumulator<T> plan(rows.count, keys, request.values, request.k, request.want_cost, cost_scale_);
    return run_plan_pass(request.rows, request.keys, request.key_potential, request.eps, plan, nullptr);
  }

  [[nodiscard]] plan_rows_result plan_quadratic_rows(const plan_quadratic_request& request) const override {
    if (request.directions == nullptr || request.values == nullptr || request.k < 1)
      throw invalid_argument("plan_quadratic_rows: needs directions, values and k ≥ 1");
    const packed_cloud<T>& rows = cloud(request.rows);
    const packed_cloud<T>& keys = cloud(request.keys);
    plan_accumulator<T> plan(rows.count, keys, request.values, request.k, false, cost_scale_);
    quadratic_inputs quadratic;
    // Padded like rows.points, so a register block of directions is read exactly like one of points.
    quadratic.directions.assign(static_cast<std::size_t>(rows.padded_rows * rows.dim), T(0));
    for (std::int64_t i = 0; i < rows.count * rows.dim; ++i) quadratic.directions[i] = static_cast<T>(request.directions[i]);
    if (request.key_directions != nullptr) quadratic.key_directions = key_panels(keys, request.key_directions, keys.dim);
    return run_plan_pass(request.rows, request.keys, request.key_potential, request.eps, plan, &quadratic);
  }

  [[nodiscard]] bool supports_key_directions() const override { return true; }

  void point_gradient(const point_gradient_request& request) override {
    const packed_cloud<T>& rows = cloud(request.rows);
    const std::int64_t d = rows.dim;
    const std::vector<double>& points = exact_points_[static_cast<int>(request.rows)];
    const plan_rows_request pass{request.rows, request.keys, request.key_potential, request.eps,
                                 exact_points_[static_cast<int>(request.keys)].data(), d, false};
    const plan_rows_result plan = plan_rows(pass);
    std::vector<double>& gradient = gradients_[static_cast<int>(request.rows)];
    if (!request.accumulate) gradient.assign(static_cast<std::size_t>(rows.count * d), 0.0);
    if (gradient.size() != static_cast<std::size_t>(rows.count * d))
      throw invalid_argument("point_gradient: accumulate into a gradient that was never written");
    const std::vector<T>& potential = slots_[index(request.row_potential)];
    for (std::int64_t i = 0; i < rows.count; ++i) {
      const double mass = math::plan_row_mass(rows.weights[i], request.unbalanced_rows,
                                              static_cast<double>(potential[i]), request.eps, plan.lse[i]);
      for (std::int64_t c = 0; c < d; ++c)
        gradient[i * d + c] += math::point_gradient_entry(request.coefficient, mass, points[i * d + c], plan.weighted[i * d + c]);
    }
  }

  void read_point_gradient(side s, const mutable_matrix_view& out) const override {
    const std::vector<double>& gradient = gradients_[static_cast<int>(s)];
    if (gradient.empty()) throw invalid_argument("read_point_gradient: no gradient was computed on that side");
    write_leading_columns(out, gradient, cloud(s).count, cloud(s).dim, "point gradient");
  }

 private:
  // The second dot tile of a quadratic pass (backend::plan_quadratic_rows): u·zᵀ.
  struct quadratic_inputs {
    std::vector<T> directions;      // (rows padded, dim) u
    std::vector<T> key_directions;  // (tiles, dim, kKeyTile) z; empty: the key panels
  };

  plan_rows_result run_plan_pass(side row_side, side key_side, slot key_potential, double eps,
                                 plan_accumulator<T>& plan, const quadratic_inputs* quadratic) const {
    const packed_cloud<T>& rows = cloud(row_side);
    const packed_cloud<T>& keys = cloud(key_side);
    const std::vector<T> bias = key_bias(keys, key_potential, eps);
    const dot_pass dots = begin_dots(row_side, key_side);
    plan_rows_result result;
    result.lse.resize(static_cast<std::size_t>(rows.count));
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads_for(rows, keys))
    for (std::int64_t group = 0; group < groups(rows); ++group) {
      const denormals_flushed flushed;
      math::lse_state<double> lse[kGroupRows];
      stream_group(rows, keys, bias, score_scale(eps), group, lse, &plan, quadratic, dots);
      const std::int64_t first = group * kGroupRows;
      const std::int64_t last = std::min(first + kGroupRows, rows.count);
      for (std::int64_t i = first; i < last; ++i) {
        const math::lse_state<double>& state = lse[i - first];
        // Scores omit the row's own −s‖p_i‖²/ε (constant along the row); put it back.
        result.lse[i] = kLn2 * state.value_log2() - cost_scale_ * static_cast<double>(rows.sq_norms[i]) / eps;
        plan.finish_row(i, state.sum);
      }
    }
    dot_cache_.end(dots.rows, dots.keys, dots.tiles);
    result.weighted = plan.take_weighted();
    result.cost = plan.take_cost();
    return result;
  }

  // A pass's use of the dot cache (dot_cache.hpp) for its pair of clouds.
  struct dot_pass {
    int rows = 0, keys = 0;
    dot_tiles tiles = dot_tiles::compute;
  };
  dot_pass begin_dots(side row_side, side key_side) const {
    dot_pass pass{static_cast<int>(row_side), static_cast<int>(key_side), dot_tiles::compute};
    pass.tiles = dot_cache_.begin(pass.rows, pass.keys, cloud(row_side), cloud(key_side));
    return pass;
  }

  static int index(slot s) { return static_cast<int>(s); }
  const packed_cloud<T>& cloud(side s) const { return clouds_[static_cast<int>(s)]; }
  static std::int64_t groups(const packed_cloud<T>& rows) { return round_up(rows.count, kGroupRows) / kGroupRows; }

  // No more threads than row groups, and one thread below ~2 ms of work (2¹⁸ score entries ×
  // d): waking a team costs more than it saves there (measured: 7×6 points took seconds on a
  // loaded 2-core machine with 2 threads, 1 ms with one).
  int threads_for(const packed_cloud<T>& rows, const packed_cloud<T>& keys) const {
    const std::int64_t work = rows.count * keys.count * std::max<std::int64_t>(rows.dim, 8);
    if (work < (std::int64_t{1} << 21)) return 1;
    return static_cast<int>(std::min<std::int64_t>(threads_, groups(rows)));
  }

  // c·log2 e with c = 2s/ε: the dot-product coefficient of a score in log2 units.
  T score_scale(double eps) const { return static_cast<T>(2 * cost_scale_ / eps * kLog2e); }

  // β_j·log2 e with β_j = h_j/ε + log w_j − s‖q_j‖²/ε, and −∞ on the padding keys of the last panel.
  std::vector<T> key_bias(const packed_cloud<T>& keys, std::optional<slot> potential, double eps) const {
    std::vector<T> bias(static_cast<std::size_t>(keys.tiles * kKeyTile), -std::numeric_limits<T>::infinity());
    const T* h = potential ? slots_[index(*potential)].data() : nullptr;
    for (std::int64_t j = 0; j < keys.count; ++j) {
      const double hj = h != nullptr ? static_cast<double>(h[j]) : 0.0;
      bias[j] = static_cast<T>(kLog2e * (hj / eps + keys.log_weights[j] - cost_scale_ * static_cast<double>(keys.sq_norms[j]) / eps));
    }
    return bias;
  }

  // Streams every key panel past the rows of `group`, folding scores into `lse` (and, in a plan pass,
  // into `plan`, with u·z from `quadratic` in a quadratic one); the dots computed, or filled into or
  // read from the dot cache as `dots` says.
  void stream_group(const packed_cloud<T>& rows, const packed_cloud<T>& keys, const std::vector<T>& bias,
                    T scale, std::int64_t group, math::lse_state<double>* lse, plan_accumulator<T>* plan,
                    const quadratic_inputs* quadratic, const dot_pass& dots) const {
    const std::int64_t first = group * kGroupRows;
    const std::int64_t blocks = std::min(kGroupRows, rows.padded_rows - first) / kRowBlock;
    for (std::int64_t r = 0; r < kGroupRows; ++r) lse[r] = math::lse_state<double>::identity();
    alignas(64) T own_dots[kRowBlock * kKeyTile];  // (kRowBlock, kKeyTile) p·q, when not cached
    alignas(64) T u_dots[kRowBlock * kKeyTile];  // (kRowBlock, kKeyTile) u·z, quadratic passes only
    alignas(64) T scores[kKeyTile];
    alignas(64) T terms[kKeyTile];  // 2^{s_j − shift}, plan passes only
    const T* second_panels =
        quadratic != nullptr && !quadratic->key_directions.empty() ? quadratic->key_directions.data() : keys.panels.data();
    for (std::int64_t tile = 0; tile < keys.tiles; ++tile) {
      const T* panel = keys.panels.data() + tile * keys.dim * kKeyTile;
      const T* second_panel = second_panels + tile * keys.dim * kKeyTile;  // (dim, kKeyTile) z, or the keys
      const T* tile_bias = bias.data() + tile * kKeyTile;
      for (std::int64_t block = 0; block < blocks; ++block) {
        const std::int64_t row0 = first + block * kRowBlock;
        const T* tile_dots = own_dots;  // kRowBlock rows of kKeyTile dots, `tile_stride` apart
        std::int64_t tile_stride = kKeyTile;
        if (dots.tiles == dot_tiles::read) {
          tile_dots = dot_cache_.tile(dots.rows, dots.keys, tile, row0);
          tile_stride = dot_cache_.stride(dots.rows, dots.keys);
        } else if (dots.tiles == dot_tiles::read_transposed) {
          dot_cache_.gather_transposed(tile, row0, own_dots);
        } else {
          score_tile_dots<T>(own_dots, rows.points.data() + row0 * rows.dim, panel, rows.dim);
          if (dots.tiles == dot_tiles::fill) dot_cache_.store(dots.rows, dots.keys, tile, row0, own_dots);
        }
        if (quadratic != nullptr)
          score_tile_dots<T>(u_dots, quadratic->directions.data() + row0 * rows.dim, second_panel, rows.dim);
        for (std::int64_t r = 0; r < kRowBlock && row0 + r < rows.count; ++r) {
          const T* row_dots = tile_dots + r * tile_stride;
          const T maximum = score_and_max(scores, row_dots, tile_bias, scale, kKeyTile);
          T shift = 0;
          double rescale = 1;
          math::lse_state<double>& state = lse[block * kRowBlock + r];
          if (!fold_tile(state, scores, maximum, kKeyTile, shift, rescale, plan != nullptr ? terms : nullptr)) continue;
          if (plan != nullptr) {
            const T* row_u_dots = quadratic != nullptr ? u_dots + r * kKeyTile : nullptr;
            plan->add_tile(keys, rows.sq_norms[row0 + r], tile, row_dots, row_u_dots, terms, rescale, row0 + r);
          }
        }
      }
    }
  }

  packed_cloud<T> clouds_[2];
  std::vector<double> exact_points_[2];  // the prepared points before rounding (point gradients)
  std::vector<double> gradients_[2];     // point gradients, (count, dim) per side
  std::vector<T> slots_[kSlotCount];
  double cost_scale_;
  int threads_;
  mutable dot_cache<T> dot_cache_;  // filled by the first pass of a pair, const passes included
  double error_ = 0;
};

}  // namespace

std::unique_ptr<backend> make_cpu_backend(const prepared_problem& problem, precision mode, int threads) {
  return make_cpu_backend(problem, mode, threads, dot_cache_budget());
}

std::unique_ptr<backend> make_cpu_backend(const prepared_problem& problem, precision mode, int threads,
                                          byte_budget& dot_cache_budget) {
  if (mode == precision::fp64) return std::make_unique<cpu_backend<double>>(problem, mode, threads, dot_cache_budget);
  return std::make_unique<cpu_backend<float>>(problem, mode, threads, dot_cache_budget);
}

}  // namespace flashsinkhorn::detail
