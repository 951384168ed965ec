// The score tiles' dot products p·q kept between passes, per (rows, keys) pair of clouds.
//
// Every pass of the CPU backend (each half-step, each plan pass) streams all (row block, key panel)
// tiles and computes their dots afresh: 2·d flops an entry. Where the clouds are small enough to
// store them, reading an entry back costs 4 or 8 bytes instead, which at d = 512 in double is ~10×
// cheaper than recomputing it. So a pair is kept while the budget allows (FLASHSINKHORN_CPU_DOT_CACHE_MIB,
// default 256 MiB, 0 turns the cache off; anything else than a whole number in [0, 65536] is an
// error) and d ≥ kMinDotCacheDim (below, recomputing costs about what reading back does). The
// first pass of a pair fills it with the values score_tile_dots computes; later passes read them, so
// the results are bitwise the same with or without the cache. Memory: padded rows × padded keys of
// T for each pair kept — quadratic, hence the budget; the clouds themselves stay linear. Passes on
// one backend from several threads at once stay correct: a pair being filled is read by no one (the
// others compute their dots), and one whose filling did not finish is never read.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "cpu/packed_cloud.hpp"
#include "flashsinkhorn/error.hpp"

namespace flashsinkhorn::detail {

inline constexpr std::int64_t kMinDotCacheDim = 16;
inline constexpr std::int64_t kDefaultDotCacheMiB = 256;

// FLASHSINKHORN_CPU_DOT_CACHE_MIB's value in bytes: unset or empty is the default.
inline std::int64_t parse_dot_cache_budget(const char* text) {
  constexpr std::int64_t kMiB = std::int64_t{1} << 20;
  if (text == nullptr || *text == '\0') return kDefaultDotCacheMiB * kMiB;
  char* end = nullptr;
  const long long value = std::strtoll(text, &end, 10);
  if (end == text || *end != '\0' || value < 0 || value > 65536)
    throw invalid_argument(std::string("FLASHSINKHORN_CPU_DOT_CACHE_MIB must be a whole number of MiB in [0, 65536] "
                                       "(or unset), got '") + text + "'");
  return value * kMiB;
}

inline std::int64_t dot_cache_budget() {
  static const std::int64_t chosen = parse_dot_cache_budget(std::getenv("FLASHSINKHORN_CPU_DOT_CACHE_MIB"));  // read once
  return chosen;
}

// What a pass does with a pair's tiles: compute them (the pair is not kept), compute them into the
// store (its first pass), or read them from it.
enum class dot_tiles { compute, fill, read };

template <class T>
class dot_cache {
 public:
  explicit dot_cache(std::int64_t budget_bytes) : budget_(budget_bytes) {}

  // Before a pass of the rows of cloud `rows_side` against the keys of `keys_side` (0: x, 1: y).
  dot_tiles begin(int rows_side, int keys_side, const packed_cloud<T>& rows, const packed_cloud<T>& keys) {
    const std::lock_guard<std::mutex> lock(mutex_);
    entry& e = entries_[rows_side][keys_side];
    if (e.state == fill_state::filled) return dot_tiles::read;
    if (e.state == fill_state::filling || rows.dim < kMinDotCacheDim) return dot_tiles::compute;
    const std::int64_t entries = rows.padded_rows * keys.tiles * kKeyTile;
    if (static_cast<std::int64_t>(sizeof(T)) * entries > budget_ - bytes()) return dot_tiles::compute;
    e.dots.assign(static_cast<std::size_t>(entries), T(0));
    e.row_blocks = rows.padded_rows / kRowBlock;
    e.state = fill_state::filling;
    return dot_tiles::fill;
  }

  // After that pass, finished: a pair it filled is read from then on.
  void end(int rows_side, int keys_side, dot_tiles used) {
    if (used != dot_tiles::fill) return;
    const std::lock_guard<std::mutex> lock(mutex_);
    entries_[rows_side][keys_side].state = fill_state::filled;
  }

  // The (kRowBlock, kKeyTile) tile of key panel `tile` and the register block from row `row0`.
  T* tile(int rows_side, int keys_side, std::int64_t tile, std::int64_t row0) {
    entry& e = entries_[rows_side][keys_side];
    return e.dots.data() + (tile * e.row_blocks + row0 / kRowBlock) * (kRowBlock * kKeyTile);
  }

  [[nodiscard]] std::int64_t bytes() const {  // (under mutex_ inside begin)
    std::int64_t total = 0;
    for (const auto& row : entries_)
      for (const entry& e : row) total += static_cast<std::int64_t>(e.dots.size() * sizeof(T));
    return total;
  }

 private:
  enum class fill_state { empty, filling, filled };
  struct entry {
    std::vector<T> dots;  // (key panels, row blocks, kRowBlock, kKeyTile)
    std::int64_t row_blocks = 0;
    fill_state state = fill_state::empty;
  };
  entry entries_[2][2];
  std::int64_t budget_;
  std::mutex mutex_;
};

}  // namespace flashsinkhorn::detail
