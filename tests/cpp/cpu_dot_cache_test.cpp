// The CPU backend's dot cache (cpu/dot_cache.hpp): its budget's parse, when a pair is kept, that one
// budget bounds every cache drawing on it (and gets their bytes back), and that a backend which keeps
// the dots gives bitwise the results of one that recomputes them — over alternating half-steps with
// blending and the error term, the debiasing pairs and plan passes.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <memory>
#include <thread>
#include <tuple>
#include <vector>

#include "core/backend.hpp"
#include "cpu/cpu_backend.hpp"
#include "cpu/dot_cache.hpp"
#include "flashsinkhorn/error.hpp"

namespace fd = flashsinkhorn::detail;
namespace fs = flashsinkhorn;

namespace {

constexpr std::int64_t kMiB = std::int64_t{1} << 20;

fd::prepared_cloud cloud_of(std::int64_t count, std::int64_t dim, double offset) {
  fd::prepared_cloud c;
  c.count = count;
  c.dim = dim;
  for (std::int64_t i = 0; i < count * dim; ++i)
    c.points.push_back(offset + 0.3 * std::sin(0.7 * static_cast<double>(i)) + 0.01 * static_cast<double>(i % dim));
  for (std::int64_t i = 0; i < count; ++i) c.weights.push_back((1.0 + static_cast<double>(i % 3)) / (2.0 * static_cast<double>(count)));
  for (double w : c.weights) c.log_weights.push_back(std::log(w));
  return c;
}

// Two fp64 clouds of 50 and 70 points in 32 dimensions, packed, and the bytes their pair takes kept
// (54 padded rows × 128 keys × 8 bytes).
struct packed_pair {
  fd::packed_cloud<double> x, y;
  std::int64_t bytes;
};

packed_pair two_clouds() {
  fd::prepared_problem problem;
  problem.x = cloud_of(50, 32, 0.0);
  problem.y = cloud_of(70, 32, 0.2);
  packed_pair pair{fd::pack_cloud<double>(problem.x, fs::precision::fp64),
                   fd::pack_cloud<double>(problem.y, fs::precision::fp64), 0};
  pair.bytes = pair.x.padded_rows * pair.y.tiles * fd::kKeyTile * 8;
  return pair;
}

TEST(CpuDotCache, TheBudgetIs1GiBUnlessAWholeNumberUpTo65536IsGiven) {
  EXPECT_EQ(fd::parse_dot_cache_budget(nullptr), 1024 * kMiB);
  EXPECT_EQ(fd::parse_dot_cache_budget(""), 1024 * kMiB);
  EXPECT_EQ(fd::parse_dot_cache_budget("0"), 0);
  EXPECT_EQ(fd::parse_dot_cache_budget("64"), 64 * kMiB);
  for (const char* bad : {"-1", "65537", "2.5", "64M", "x"}) {
    try {
      (void)fd::parse_dot_cache_budget(bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const fs::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("FLASHSINKHORN_CPU_DOT_CACHE_MIB"), std::string::npos) << e.what();
    }
  }
}

TEST(CpuDotCache, KeepsAPairOnceWithinTheBudgetAndFromTheMinimumDimension) {
  const auto [x, y, pair_bytes] = two_clouds();
  fd::byte_budget budget(pair_bytes + 1);
  fd::dot_cache<double> cache(budget);
  EXPECT_EQ(cache.begin(1, 0, y, x), fd::dot_tiles::compute);  // y's rows first: not stored that way
  EXPECT_EQ(cache.begin(0, 1, x, y), fd::dot_tiles::fill);  // (passes overlapping: none ends here)
  EXPECT_EQ(cache.bytes(), pair_bytes);
  EXPECT_EQ(cache.begin(0, 1, x, y), fd::dot_tiles::compute);  // being filled: not read, not filled twice
  EXPECT_EQ(cache.begin(1, 0, y, x), fd::dot_tiles::compute);
  cache.end(0, 1, fd::dot_tiles::fill);
  EXPECT_EQ(cache.begin(0, 1, x, y), fd::dot_tiles::read);
  EXPECT_EQ(cache.begin(1, 0, y, x), fd::dot_tiles::read_transposed);  // the same store
  EXPECT_EQ(cache.begin(0, 0, x, x), fd::dot_tiles::compute);  // over what is left of the budget
  EXPECT_EQ(cache.stride(0, 1), 128);
  EXPECT_EQ(cache.tile(0, 1, 1, 12) - cache.tile(0, 1, 0, 0), 12 * 128 + 64);

  fd::prepared_problem narrow;
  narrow.x = cloud_of(50, fd::kMinDotCacheDim - 1, 0.0);
  const fd::packed_cloud<double> n = fd::pack_cloud<double>(narrow.x, fs::precision::fp64);
  fd::byte_budget plenty(1024 * kMiB), none(0);
  fd::dot_cache<double> roomy(plenty);
  EXPECT_EQ(roomy.begin(0, 0, n, n), fd::dot_tiles::compute);  // recomputing is as cheap there
  EXPECT_EQ(fd::dot_cache<double>(none).begin(0, 1, x, y), fd::dot_tiles::compute);
}

TEST(CpuDotCache, OneBudgetBoundsEveryCacheOnItAndGetsTheirBytesBack) {
  const auto [x, y, pair_bytes] = two_clouds();
  fd::byte_budget budget(pair_bytes + 1);  // room for one pair among all the caches
  {
    fd::dot_cache<double> first(budget);
    EXPECT_EQ(first.begin(0, 1, x, y), fd::dot_tiles::fill);
    EXPECT_EQ(budget.reserved(), pair_bytes);
    fd::dot_cache<double> second(budget);  // a second solver alive at the same time
    EXPECT_EQ(second.begin(0, 1, x, y), fd::dot_tiles::compute);
    EXPECT_EQ(budget.reserved(), pair_bytes);
  }
  EXPECT_EQ(budget.reserved(), 0);  // both destroyed: everything given back
  fd::dot_cache<double> third(budget);
  EXPECT_EQ(third.begin(0, 1, x, y), fd::dot_tiles::fill);
  third.end(0, 1, fd::dot_tiles::fill);
}

TEST(CpuDotCache, ANewPairTakesTheStoresOfIdleCachesButNeverOfOneInAPass) {
  const auto [x, y, pair_bytes] = two_clouds();
  fd::byte_budget budget(pair_bytes + 1), other(pair_bytes + 1);
  fd::dot_cache<double> older(budget), newer(budget), elsewhere(other);
  ASSERT_EQ(older.begin(0, 1, x, y), fd::dot_tiles::fill);
  ASSERT_EQ(elsewhere.begin(0, 1, x, y), fd::dot_tiles::fill);
  elsewhere.end(0, 1, fd::dot_tiles::fill);
  EXPECT_EQ(newer.begin(0, 1, x, y), fd::dot_tiles::compute);  // the older one is in its pass: kept
  newer.end(0, 1, fd::dot_tiles::compute);
  older.end(0, 1, fd::dot_tiles::fill);
  EXPECT_EQ(newer.begin(0, 1, x, y), fd::dot_tiles::fill);  // now idle: its store goes to the new pair
  EXPECT_EQ(older.bytes(), 0);
  EXPECT_EQ(newer.bytes(), pair_bytes);
  EXPECT_EQ(budget.reserved(), pair_bytes);
  EXPECT_EQ(elsewhere.bytes(), pair_bytes);  // another budget's cache is never touched
  newer.end(0, 1, fd::dot_tiles::fill);
  EXPECT_EQ(older.begin(0, 1, x, y), fd::dot_tiles::fill);  // used again: it takes the store back
  older.end(0, 1, fd::dot_tiles::fill);
  EXPECT_EQ(older.begin(0, 1, x, y), fd::dot_tiles::read);
  older.end(0, 1, fd::dot_tiles::read);
}

// Solvers on several threads at once (Python threads, each with its own solver) share the budget:
// their caches fill, read and take each other's stores with no deadlock, and the budget never holds
// more than its limit or other than what the caches hold.
TEST(CpuDotCache, CachesOnThreadsShareOneBudgetWithoutDeadlockOrOvercommit) {
  const auto [x, y, pair_bytes] = two_clouds();
  fd::byte_budget budget(2 * pair_bytes + 1);  // room for two pairs among three caches
  std::vector<std::unique_ptr<fd::dot_cache<double>>> caches;
  for (int c = 0; c < 3; ++c) caches.push_back(std::make_unique<fd::dot_cache<double>>(budget));
  std::atomic<bool> overcommitted{false};
  std::vector<std::thread> threads;
  for (int c = 0; c < 3; ++c) {
    threads.emplace_back([&, c] {
      for (int round = 0; round < 2000; ++round) {
        const fd::dot_tiles used = caches[c]->begin(0, 1, x, y);
        if (budget.reserved() > budget.limit()) overcommitted = true;
        caches[c]->end(0, 1, used);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_FALSE(overcommitted);
  EXPECT_EQ(budget.reserved(), caches[0]->bytes() + caches[1]->bytes() + caches[2]->bytes());
  caches.clear();
  EXPECT_EQ(budget.reserved(), 0);
}

TEST(ByteBudget, GrantsWhatFitsRefusesWhatDoesNotAndTakesReleasesBack) {
  fd::byte_budget budget(100);
  EXPECT_TRUE(budget.try_reserve(60));
  EXPECT_FALSE(budget.try_reserve(41));  // refused whole, nothing reserved
  EXPECT_EQ(budget.reserved(), 60);
  EXPECT_TRUE(budget.try_reserve(40));
  EXPECT_FALSE(budget.try_reserve(1));
  budget.release(60);
  EXPECT_TRUE(budget.try_reserve(0));
  EXPECT_EQ(budget.reserved(), 40);
  EXPECT_EQ(budget.limit(), 100);
}

// Runs the same passes on `compute`: the potentials and plan results, in order.
std::vector<double> passes_of(fd::backend& compute, std::int64_t y_count) {
  using fd::side;
  using fd::slot;
  std::vector<double> out;
  auto append = [&](const std::vector<double>& v) { out.insert(out.end(), v.begin(), v.end()); };
  const double eps = 0.05;
  for (int iteration = 0; iteration < 3; ++iteration) {  // alternating, the later ones blended with an error term
    const bool later = iteration > 0;
    compute.softmin({side::x, side::y, slot::g, later ? std::optional(slot::f) : std::nullopt, slot::f, eps, 1.0,
                     later ? 0.7 : 1.0, later});
    compute.softmin({side::y, side::x, slot::f, later ? std::optional(slot::g) : std::nullopt, slot::g, eps, 1.0,
                     later ? 0.7 : 1.0, later});
  }
  out.push_back(compute.take_error());
  compute.softmin({side::x, side::x, std::nullopt, std::nullopt, slot::f_aa, eps});  // the debiasing pairs
  compute.softmin({side::y, side::y, std::nullopt, std::nullopt, slot::g_bb, eps});
  for (slot s : {slot::f, slot::g, slot::f_aa, slot::g_bb}) append(compute.read_potential(s));
  std::vector<double> values(static_cast<std::size_t>(2 * y_count));  // (y's points, k = 2)
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = std::cos(static_cast<double>(i));
  const fd::plan_rows_result plan = compute.plan_rows({side::x, side::y, slot::g, eps, values.data(), 2, true});
  const fd::plan_rows_result transposed = compute.plan_rows({side::y, side::x, slot::f, eps, nullptr, 0, true});
  for (const fd::plan_rows_result* r : {&plan, &transposed}) {
    append(r->lse);
    append(r->weighted);
    append(r->cost);
  }
  return out;
}

TEST(CpuDotCache, KeptDotsGiveBitwiseTheResultsOfRecomputedOnes) {
  for (const fs::precision mode : {fs::precision::fp64, fs::precision::fp32, fs::precision::tf32}) {
    // 50 and 70 points (padded keys past x's padded rows), 64 and 50 (y's padded rows past its padded
    // keys): the transposed reads' edges both ways.
    for (const auto& [dim, x_count, y_count] : {std::tuple<std::int64_t, std::int64_t, std::int64_t>{32, 50, 70},
                                               {40, 64, 50}, {fd::kMinDotCacheDim - 1, 50, 70}}) {
      fd::prepared_problem problem;
      problem.x = cloud_of(x_count, dim, 0.0);
      problem.y = cloud_of(y_count, dim, 0.2);
      fd::byte_budget none(0), plenty(1024 * kMiB);
      const std::unique_ptr<fd::backend> recomputing = fd::make_cpu_backend(problem, mode, 2, none);
      const std::unique_ptr<fd::backend> keeping = fd::make_cpu_backend(problem, mode, 2, plenty);
      const std::vector<double> expected = passes_of(*recomputing, y_count);
      const std::vector<double> got = passes_of(*keeping, y_count);
      ASSERT_EQ(got.size(), expected.size());
      for (std::size_t i = 0; i < got.size(); ++i) {
        ASSERT_TRUE(std::isfinite(expected[i])) << i;
        ASSERT_EQ(got[i], expected[i]) << "mode " << static_cast<int>(mode) << ", d = " << dim << ", entry " << i;
      }
    }
  }
}

}  // namespace
