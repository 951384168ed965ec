// Bytes reserved against one limit by many holders at once (the CPU backends' dot caches share one
// per process): a reservation that would take the total past the limit is refused, and a holder
// gives back what it reserved. Thread-safe; the total never exceeds the limit.
#pragma once

#include <atomic>
#include <cstdint>

namespace flashsinkhorn::detail {

class byte_budget {
 public:
  explicit byte_budget(std::int64_t limit_bytes) : limit_(limit_bytes) {}
  byte_budget(const byte_budget&) = delete;
  byte_budget& operator=(const byte_budget&) = delete;

  // Reserves `bytes` (≥ 0) when the total stays within the limit; false, reserving nothing, otherwise.
  bool try_reserve(std::int64_t bytes) {
    std::int64_t held = reserved_.load(std::memory_order_relaxed);
    do {
      if (bytes > limit_ - held) return false;
    } while (!reserved_.compare_exchange_weak(held, held + bytes, std::memory_order_relaxed));
    return true;
  }

  // Gives back `bytes` that try_reserve granted.
  void release(std::int64_t bytes) { reserved_.fetch_sub(bytes, std::memory_order_relaxed); }

  [[nodiscard]] std::int64_t reserved() const { return reserved_.load(std::memory_order_relaxed); }
  [[nodiscard]] std::int64_t limit() const { return limit_; }

 private:
  const std::int64_t limit_;
  std::atomic<std::int64_t> reserved_{0};
};

}  // namespace flashsinkhorn::detail
