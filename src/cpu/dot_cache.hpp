// The score tiles' dot products p·q kept between passes, per (rows, keys) pair of clouds.
//
// Every pass of the CPU backend (each half-step, each plan pass) streams all (row block, key panel)
// tiles and computes their dots afresh: 2·d flops an entry. Where the clouds are small enough to
// store them, reading an entry back costs 4 or 8 bytes instead, which at d = 512 in double is ~10×
// cheaper than recomputing it. So a pair is kept while the budget allows and d ≥ kMinDotCacheDim
// (below, recomputing costs about what reading back does). The budget is the process's, shared by
// every backend alive (FLASHSINKHORN_CPU_DOT_CACHE_MIB, default 1 GiB, 0 turns the cache off;
// anything else than a whole number in [0, 65536] is an error): solvers kept alive together (results
// in a list, autograd graphs) cannot hold more than it between them, a backend gives its share back
// when it is destroyed, and a new pair that finds the budget spent takes the stores of idle caches,
// oldest first (dot_cache_registry.hpp). 1 GiB keeps n = m = 10⁴ (400 MB in fp32, 800 MB in fp64): on the 2-core
// VM, 10 iterations at 10⁴ × 512 fp32 took 11.2–12.5 s recomputing (the old 256 MiB) and 2.6–3.7 s
// with the dots kept (session 45). The
// first pass of a pair fills it with the values score_tile_dots computes; later passes read them, so
// the results are bitwise the same with or without the cache. The half-steps of y's rows against x's
// keys read the (x rows, y keys) store transposed, so a pair of clouds is kept once. Memory: padded
// rows × padded keys of T for each pair kept — quadratic, hence the budget; the clouds themselves
// stay linear. Passes on
// one backend from several threads at once stay correct: a pair being filled is read by no one (the
// others compute their dots), and one whose filling did not finish is never read.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <vector>

#include "core/byte_budget.hpp"
#include "core/mib_setting.hpp"
#include "cpu/dot_cache_registry.hpp"
#include "cpu/packed_cloud.hpp"

namespace flashsinkhorn::detail {

inline constexpr std::int64_t kMinDotCacheDim = 16;
inline constexpr std::int64_t kDefaultDotCacheMiB = 1024;

// FLASHSINKHORN_CPU_DOT_CACHE_MIB's value in bytes: unset or empty is the default.
inline std::int64_t parse_dot_cache_budget(const char* text) {
  return parse_mib_setting(text, "FLASHSINKHORN_CPU_DOT_CACHE_MIB", kDefaultDotCacheMiB, 65536);
}

// The process's budget, shared by every CPU backend (its limit read once).
inline byte_budget& dot_cache_budget() {
  static byte_budget shared(parse_dot_cache_budget(std::getenv("FLASHSINKHORN_CPU_DOT_CACHE_MIB")));
  return shared;
}

// What a pass does with a tile's dots: compute them (the pair is not kept), compute them and store
// them (the pair's first pass with x's rows against y's keys), or read them back — in place, or
// transposed for y's rows against x's keys (the same dots: p_x·(η⊙q_y) = p_y·(η⊙q_x)).
enum class dot_tiles { compute, fill, read, read_transposed };

template <class T>
class dot_cache final : public evictable_dot_cache {
 public:
  // Keeps pairs while `budget` (which must outlive the cache) grants their bytes, taking them from
  // idle caches on the same budget where it must.
  explicit dot_cache(byte_budget& budget) : budget_(budget) { dot_cache_registry::process().add(this); }
  dot_cache(const dot_cache&) = delete;
  dot_cache& operator=(const dot_cache&) = delete;
  ~dot_cache() override {
    dot_cache_registry::process().remove(this);
    budget_.release(bytes());
  }

  // Before a pass of the rows of cloud `rows_side` against the keys of `keys_side` (0: x, 1: y); every
  // begin is followed by its end, after the pass (until then the cache is busy: never evicted).
  dot_tiles begin(int rows_side, int keys_side, const packed_cloud<T>& rows, const packed_cloud<T>& keys) {
    const std::lock_guard<std::mutex> lock(mutex_);
    ++passes_;
    const bool transposed = rows_side > keys_side;
    entry& e = entries_[rows_side + keys_side];
    if (e.state == fill_state::filled) return transposed ? dot_tiles::read_transposed : dot_tiles::read;
    if (e.state == fill_state::filling || transposed || rows.dim < kMinDotCacheDim) return dot_tiles::compute;
    const std::int64_t entries = rows.padded_rows * keys.tiles * kKeyTile;
    const std::int64_t bytes = static_cast<std::int64_t>(sizeof(T)) * entries;
    if (!budget_.try_reserve(bytes) && !dot_cache_registry::process().reserve_evicting(budget_, bytes, this))
      return dot_tiles::compute;
    e.dots.assign(static_cast<std::size_t>(entries), T(0));
    e.rows = rows.padded_rows;
    e.stride = keys.tiles * kKeyTile;
    e.state = fill_state::filling;
    return dot_tiles::fill;
  }

  // After that pass, finished: a pair it filled is read from then on.
  void end(int rows_side, int keys_side, dot_tiles used) {
    const std::lock_guard<std::mutex> lock(mutex_);
    --passes_;
    if (used == dot_tiles::fill) entries_[rows_side + keys_side].state = fill_state::filled;
  }

  [[nodiscard]] const byte_budget& budget() const override { return budget_; }

  std::int64_t drop_if_idle() override {
    const std::unique_lock<std::mutex> lock(mutex_, std::try_to_lock);
    if (!lock.owns_lock() || passes_ > 0) return 0;
    const std::int64_t freed = bytes();
    for (entry& e : entries_) e = entry{};
    budget_.release(freed);
    return freed;
  }

  // The stored dots of key panel `tile` against the register block from row `row0`: kRowBlock rows
  // `stride()` apart, kKeyTile keys each (a pass in the stored orientation).
  [[nodiscard]] const T* tile(int rows_side, int keys_side, std::int64_t tile, std::int64_t row0) const {
    const entry& e = entries_[rows_side + keys_side];
    return e.dots.data() + row0 * e.stride + tile * kKeyTile;
  }
  [[nodiscard]] std::int64_t stride(int rows_side, int keys_side) const { return entries_[rows_side + keys_side].stride; }

  // A first pass's (kRowBlock, kKeyTile) tile `dots`, into the store.
  void store(int rows_side, int keys_side, std::int64_t tile, std::int64_t row0, const T* dots) {
    entry& e = entries_[rows_side + keys_side];
    for (std::int64_t r = 0; r < kRowBlock; ++r)
      std::copy(dots + r * kKeyTile, dots + (r + 1) * kKeyTile, e.dots.data() + (row0 + r) * e.stride + tile * kKeyTile);
  }

  // The (kRowBlock, kKeyTile) tile of y's rows from `row0` against x's key panel `tile`, read off the
  // stored (x rows, y keys) dots into `out`: per key i one run of kRowBlock stored entries. Keys past
  // x's padded rows, rows past y's padded keys read 0 (padding: their scores are never used).
  void gather_transposed(std::int64_t tile, std::int64_t row0, T* out) const {
    const entry& e = entries_[1];
    for (std::int64_t c = 0; c < kKeyTile; ++c) {
      const std::int64_t i = tile * kKeyTile + c;
      const T* run = e.dots.data() + i * e.stride + row0;
      for (std::int64_t r = 0; r < kRowBlock; ++r) out[r * kKeyTile + c] = i < e.rows && row0 + r < e.stride ? run[r] : T(0);
    }
  }

  [[nodiscard]] std::int64_t bytes() const {  // (under mutex_ where another thread may fill or drop)
    std::int64_t total = 0;
    for (const entry& e : entries_) total += static_cast<std::int64_t>(e.dots.size() * sizeof(T));
    return total;
  }

 private:
  enum class fill_state { empty, filling, filled };
  struct entry {
    std::vector<T> dots;  // (rows, stride) row-major: the first cloud's padded rows, the second's padded keys
    std::int64_t rows = 0;
    std::int64_t stride = 0;
    fill_state state = fill_state::empty;
  };
  entry entries_[3];  // by rows side + keys side: (x, x), (x, y) — read transposed for (y, x) — and (y, y)
  byte_budget& budget_;
  int passes_ = 0;  // passes between their begin and end
  std::mutex mutex_;
};

}  // namespace flashsinkhorn::detail
