// A CPU plan pass's per-row accumulators (FlashAttention's output accumulator), fed one key tile at
// a time and rescaled with the running maximum exactly like the row's LSE sum (online_lse.hpp):
//   weighted_ic ← weighted_ic·rescale + Σ_j e_j·V_jc,  e_j = p_j (·u_i·z_j in a quadratic pass),
//   cost_i      ← cost_i·rescale + Σ_j p_j·C_ij,       p_j = 2^{s_ij − shift} (the tile's terms),
// and divided by the row's sum at the end (finish_row).
//
// Σ_j e_j·V_jc is summed over the tile's kKeyTile keys in the working type T (the GPU's narrow passes
// likewise sum a sub-tile in fp32) and added in double, in one of two layouts of V:
//   dots   (k < kColumnSweepMin) V laid out like the key panels, (tiles, k, kKeyTile): one SIMD dot
//          over the tile's keys per column, which pays a horizontal sum per column;
//   sweep  V key-major, (tiles·kKeyTile, stride), stride = k rounded up to whole SIMD vectors: the
//          keys one by one against column vectors held in registers, a broadcast per key.
// Measured (2-core VM, 2026-12-05, bench/results/cpu_plan_pass_ab_vm_2026-12-05.jsonl, a point
// gradient in half-steps, fp32 dots / sweep): k = 8 1.85 / 1.7, k = 16 2.3 / 1.85, k = 64 3.6 / 2.6
// (fp64 1.45 / 1.3, 1.65 / 1.5, 2.5 / 2.3); at k = 3 the sweep lost (1.7 against 1.4, one run).
// The cost's terms are formed in double (C_ij = s(‖p‖² + ‖q‖² − 2p·q) cancels).
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "cpu/packed_cloud.hpp"
#include "cpu/score_tile.hpp"

namespace flashsinkhorn::detail {

inline constexpr std::int64_t kColumnSweepMin = 8;

// v (keys count, columns) row-major, laid out like keys.panels: (tiles, columns, kKeyTile), key
// fastest (padding keys zero; their bias is −∞).
template <class T>
std::vector<T> key_panels(const packed_cloud<T>& keys, const double* v, std::int64_t columns) {
  std::vector<T> panels(static_cast<std::size_t>(keys.tiles * columns * kKeyTile), T(0));
  for (std::int64_t j = 0; j < keys.count; ++j) {
    const std::int64_t tile = j / kKeyTile, lane = j % kKeyTile;
    for (std::int64_t c = 0; c < columns; ++c)
      panels[(tile * columns + c) * kKeyTile + lane] = static_cast<T>(v[j * columns + c]);
  }
  return panels;
}

template <class T>
class plan_accumulator {
 public:
  // `values`: V (keys.count, k) row-major (k = 0: none); `rows`: the pass's row count.
  plan_accumulator(std::int64_t rows, const packed_cloud<T>& keys, const double* values, std::int64_t k,
                   bool want_cost, double cost_scale)
      : k_(k), sweep_(k >= kColumnSweepMin), stride_(round_up(k, simd<T>::kLanes)), want_cost_(want_cost),
        cost_scale_(cost_scale), weighted_(static_cast<std::size_t>(rows * k), 0.0),
        cost_(want_cost ? static_cast<std::size_t>(rows) : 0, 0.0) {
    if (sweep_) {
      values_.assign(static_cast<std::size_t>(keys.tiles * kKeyTile * stride_), T(0));
      for (std::int64_t j = 0; j < keys.count; ++j)
        for (std::int64_t c = 0; c < k; ++c) values_[j * stride_ + c] = static_cast<T>(values[j * k + c]);
    } else if (k > 0) {
      values_ = key_panels(keys, values, k);
    }
  }

  // Key tile `tile` into row `row`: `terms` its p_j (kKeyTile of them, overwritten by e_j),
  // `row_dots` its p·q (the cost's), `row_u_dots` u_i·z_j in a quadratic pass (else null).
  void add_tile(const packed_cloud<T>& keys, T row_sq_norm, std::int64_t tile, const T* row_dots,
                const T* row_u_dots, T* __restrict terms, double rescale, std::int64_t row) {
    if (want_cost_) add_cost(keys, row_sq_norm, tile, row_dots, terms, rescale, row);
    if (row_u_dots != nullptr)
      for (std::int64_t j = 0; j < kKeyTile; ++j) terms[j] *= row_u_dots[j];
    double* weighted = weighted_.data() + row * k_;
    if (sweep_) {
      const T* tile_values = values_.data() + tile * kKeyTile * stride_;
      const std::int64_t vectors = stride_ / simd<T>::kLanes;
      std::int64_t v0 = 0;
      for (; v0 + kSweepVectors <= vectors; v0 += kSweepVectors)
        column_sweep<kSweepVectors>(weighted, rescale, terms, tile_values, v0);
      for (; v0 + 2 <= vectors; v0 += 2) column_sweep<2>(weighted, rescale, terms, tile_values, v0);
      for (; v0 < vectors; ++v0) column_sweep<1>(weighted, rescale, terms, tile_values, v0);
      return;
    }
    const T* panel = values_.data() + tile * k_ * kKeyTile;
    for (std::int64_t c = 0; c < k_; ++c)
      weighted[c] = weighted[c] * rescale + static_cast<double>(simd_dot(terms, panel + c * kKeyTile, kKeyTile));
  }

  // Divides row `row`'s accumulators by its LSE sum (Σ_j p_j against its final maximum).
  void finish_row(std::int64_t row, double sum) {
    for (std::int64_t c = 0; c < k_; ++c) weighted_[row * k_ + c] /= sum;
    if (want_cost_) cost_[row] /= sum;
  }

  std::vector<double> take_weighted() { return std::move(weighted_); }  // (rows, k)
  std::vector<double> take_cost() { return std::move(cost_); }          // (rows,), or empty

 private:
  void add_cost(const packed_cloud<T>& keys, T row_sq_norm, std::int64_t tile, const T* row_dots, const T* terms,
                double rescale, std::int64_t row) {
    const std::int64_t first_key = tile * kKeyTile;
    const std::int64_t count = std::min(kKeyTile, keys.count - first_key);
    double cost = cost_[row] * rescale;
    for (std::int64_t j = 0; j < count; ++j) {
      const double c_ij = cost_scale_ * (static_cast<double>(row_sq_norm) +
                                         static_cast<double>(keys.sq_norms[first_key + j]) -
                                         2 * static_cast<double>(row_dots[j]));
      cost += static_cast<double>(terms[j]) * c_ij;
    }
    cost_[row] = cost;
  }

  // Columns [v0·L, (v0 + kVectors)·L) of a tile's Σ_j e_j·V_j (L = SIMD lanes), then added into
  // `weighted` (the padding columns past k are dropped). Eight vector accumulators whatever
  // kVectors (the keys interleaved over 8/kVectors of them), so that eight FMA chains overlap.
  static constexpr int kSweepVectors = 8;
  template <int kVectors>
  void column_sweep(double* weighted, double rescale, const T* terms, const T* tile_values, std::int64_t v0) const {
    using vec = typename simd<T>::vec;
    constexpr int kLanes = simd<T>::kLanes;
    constexpr int kInterleave = kSweepVectors / kVectors;
    static_assert(kSweepVectors % kVectors == 0 && kKeyTile % kInterleave == 0);
    vec sums[kInterleave][kVectors] = {};
    const T* column = tile_values + v0 * kLanes;
    for (std::int64_t j = 0; j < kKeyTile; j += kInterleave)
      for (int i = 0; i < kInterleave; ++i) {
        const T e = terms[j + i];
        for (int w = 0; w < kVectors; ++w) sums[i][w] += e * load_vec(column + (j + i) * stride_ + w * kLanes);
      }
    for (int w = 0; w < kVectors; ++w) {
      for (int i = 1; i < kInterleave; ++i) sums[0][w] += sums[i][w];
      for (int lane = 0; lane < kLanes; ++lane) {
        const std::int64_t c = (v0 + w) * kLanes + lane;
        if (c < k_) weighted[c] = weighted[c] * rescale + static_cast<double>(sums[0][w][lane]);
      }
    }
  }

  std::int64_t k_;
  bool sweep_;
  std::int64_t stride_;
  bool want_cost_;
  double cost_scale_;
  std::vector<T> values_;
  std::vector<double> weighted_;
  std::vector<double> cost_;
};

}  // namespace flashsinkhorn::detail
