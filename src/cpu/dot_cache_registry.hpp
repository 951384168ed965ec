// The CPU dot caches alive in the process, oldest first, and how a new pair makes room in a spent
// budget: caches on the same budget that no pass is using give their stores up, oldest first. So the
// solver in use keeps its dots, and one kept alive after its last pass (a result held in a list, a
// training loop's previous graph while the next solve runs) loses them — and refills them, bitwise
// the same, if it is used again. Without this, a loop whose previous solver is still alive during the
// next solve alternates between cached and recomputing solves once two pairs outgrow the budget.
#pragma once

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <vector>

#include "core/byte_budget.hpp"

namespace flashsinkhorn::detail {

// What the registry needs of a cache.
class evictable_dot_cache {
 public:
  virtual ~evictable_dot_cache() = default;
  [[nodiscard]] virtual const byte_budget& budget() const = 0;
  // Drops every store and gives its bytes back to the budget, when no pass is under way and the cache
  // is not locked right now (a cache busy in another thread is skipped, never waited for); the bytes
  // given back.
  virtual std::int64_t drop_if_idle() = 0;
};

class dot_cache_registry {
 public:
  static dot_cache_registry& process() {
    static dot_cache_registry registry;
    return registry;
  }

  void add(evictable_dot_cache* cache) {
    const std::lock_guard<std::mutex> lock(mutex_);
    caches_.push_back(cache);
  }

  // Before `cache` is destroyed: no eviction reaches it after this returns.
  void remove(evictable_dot_cache* cache) {
    const std::lock_guard<std::mutex> lock(mutex_);
    caches_.erase(std::remove(caches_.begin(), caches_.end(), cache), caches_.end());
  }

  // Reserves `bytes` of `budget` for `asking`, dropping the idle caches on that budget other than
  // `asking`, oldest first, until it fits; false (nothing reserved) when even that is not enough.
  bool reserve_evicting(byte_budget& budget, std::int64_t bytes, const evictable_dot_cache* asking) {
    const std::lock_guard<std::mutex> lock(mutex_);
    for (evictable_dot_cache* cache : caches_) {
      if (budget.try_reserve(bytes)) return true;
      if (cache != asking && &cache->budget() == &budget) cache->drop_if_idle();
    }
    return budget.try_reserve(bytes);
  }

 private:
  std::mutex mutex_;
  std::vector<evictable_dot_cache*> caches_;  // in the order they were made
};

}  // namespace flashsinkhorn::detail
