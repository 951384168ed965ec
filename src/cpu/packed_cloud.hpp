// A prepared cloud in the CPU backend's working type T, laid out for both of its roles:
//   as rows: points (padded_rows, dim) row-major — a row block is broadcast one coordinate at a time;
//   as keys: panels of kKeyTile keys, each (dim, kKeyTile) key-fastest — one coordinate of 64 keys is
//            a few contiguous SIMD vectors.
//            The panels hold the points in the keys' role, η⊙q (prepared_cloud::key_role_points: the
//            negative-signature coordinates of a label cost negated), the rows hold p; so a cloud is
//            rows and keys at once (debiasing) with no second copy.
// Padding rows are zero; padding keys get bias −∞ (see cpu_backend.cpp), so they weigh exactly 0.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "core/operand_rounding.hpp"
#include "core/prepared_cloud.hpp"
#include "flashsinkhorn/options.hpp"

namespace flashsinkhorn::detail {

inline constexpr std::int64_t kKeyTile = 64;  // keys per panel: 16 KB at d = 64 floats, stays in L1
// rows per register block: 6 × kVecsPerStrip accumulator vectors + the key loads fit the registers (score_tile.hpp)
inline constexpr std::int64_t kRowBlock = 6;

inline std::int64_t round_up(std::int64_t value, std::int64_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

template <class T>
struct packed_cloud {
  std::int64_t count = 0;
  std::int64_t dim = 0;
  std::int64_t padded_rows = 0;
  std::int64_t tiles = 0;
  std::vector<T> points;      // (padded_rows, dim)
  std::vector<T> panels;      // (tiles, dim, kKeyTile)
  std::vector<T> sq_norms;    // (count,) ‖p_i‖²_η of the rounded points (signed, see prepared_cloud.hpp)
  std::vector<double> weights;
  std::vector<double> log_weights;
};

// The operand in T: rounded as the mode's operands (core/operand_rounding.hpp), which T holds exactly.
template <class T>
T round_operand(double value, precision mode) {
  return static_cast<T>(rounded_operand(value, mode));
}

template <class T>
packed_cloud<T> pack_cloud(const prepared_cloud& in, precision mode) {
  packed_cloud<T> out;
  out.count = in.count;
  out.dim = in.dim;
  out.padded_rows = round_up(in.count, kRowBlock);
  out.tiles = round_up(in.count, kKeyTile) / kKeyTile;
  out.points.assign(static_cast<std::size_t>(out.padded_rows * in.dim), T(0));
  out.panels.assign(static_cast<std::size_t>(out.tiles * in.dim * kKeyTile), T(0));
  out.sq_norms.resize(static_cast<std::size_t>(in.count));
  const std::vector<double>& keys = in.key_role_points();
  for (std::int64_t i = 0; i < in.count; ++i) {
    const std::int64_t tile = i / kKeyTile;
    const std::int64_t lane = i % kKeyTile;
    for (std::int64_t k = 0; k < in.dim; ++k) {
      out.points[i * in.dim + k] = round_operand<T>(in.points[i * in.dim + k], mode);
      // Rounding commutes with negation, so these are η⊙(the rounded row values).
      out.panels[(tile * in.dim + k) * kKeyTile + lane] = round_operand<T>(keys[i * in.dim + k], mode);
    }
    out.sq_norms[i] = static_cast<T>(signed_sq_norm(out.points.data() + i * in.dim, in.dim, in.negative_dim));
  }
  out.weights = in.weights;
  out.log_weights = in.log_weights;
  return out;
}

}  // namespace flashsinkhorn::detail
