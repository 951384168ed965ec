// The key-split plans of the softmin launches (key_splits.hpp): the occupancy rule, the least
// count a streamed kernel asks for to keep its resident query blocks in L2, and where the streamed
// kernel runs in key pairs. Host only (CI runs them).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "cuda/key_splits.hpp"
#include "cuda/tile_config.hpp"

namespace {

using namespace flashsinkhorn::detail;

constexpr std::int64_t kMiB = std::int64_t{1} << 20;
constexpr std::int64_t kSlots = 132;  // the H100's and H200's SMs, one streamed CTA each

// A streamed kernel's query block: 128 rows of `words` 32-bit words.
constexpr std::int64_t query_block_bytes(std::int64_t words) { return 128 * words * 4; }

std::int64_t blocks_of(std::int64_t n) { return (n + 127) / 128; }

TEST(key_splits, streamed_query_blocks_that_overflow_the_budget_ask_for_splits) {
  const std::int64_t blocks = blocks_of(50000);  // 391 row blocks: every SM holds a distinct one unsplit
  // tf32, d = 1,024: 132 × 512 KiB = 66 MiB; 48 blocks fit in 24 MiB, so 3 splits (44 blocks).
  EXPECT_EQ(streamed_query_splits(blocks, kSlots, query_block_bytes(1024), 24 * kMiB), 3);
  // tf32, d = 512 (or bf16, d = 1,024): 33 MiB, 96 blocks fit: 2 splits.
  EXPECT_EQ(streamed_query_splits(blocks, kSlots, query_block_bytes(512), 24 * kMiB), 2);
  // bf16, d = 512: 16.5 MiB fit.
  EXPECT_EQ(streamed_query_splits(blocks, kSlots, query_block_bytes(256), 24 * kMiB), 1);
  // Whatever the count, the resident distinct blocks then fit.
  for (const std::int64_t words : {512, 1024, 2048, 4096}) {
    const int splits = streamed_query_splits(blocks, kSlots, query_block_bytes(words), 24 * kMiB);
    const std::int64_t resident = (kSlots + splits - 1) / splits;
    EXPECT_LE(resident * query_block_bytes(words), 24 * kMiB) << words;
  }
}

TEST(key_splits, few_row_blocks_or_no_budget_ask_for_none) {
  // n = 2,000: 16 blocks of 512 KiB are 8 MiB, resident whatever the grid's order.
  EXPECT_EQ(streamed_query_splits(blocks_of(2000), kSlots, query_block_bytes(1024), 24 * kMiB), 1);
  EXPECT_EQ(streamed_query_splits(blocks_of(50000), kSlots, query_block_bytes(1024), 0), 1);  // rule off
  EXPECT_EQ(streamed_query_splits(blocks_of(50000), kSlots, 0, 24 * kMiB), 1);  // a resident kernel
}

TEST(key_splits, a_least_count_is_kept_and_covers_every_key_tile) {
  const std::int64_t tiles = blocks_of(50000);
  const split_plan free = plan_key_splits(tiles, tiles, kSlots, tile::kMaxSplits, tile::kMinTilesPerSplit);
  EXPECT_EQ(free.splits, 1);  // 391 row blocks fill the SMs
  for (const int least : {2, 3, 5}) {
    const split_plan plan = plan_key_splits(tiles, tiles, kSlots, tile::kMaxSplits, tile::kMinTilesPerSplit, least);
    EXPECT_GE(plan.splits, least);
    EXPECT_GE(static_cast<std::int64_t>(plan.splits) * plan.tiles_per_split, tiles);
    EXPECT_LT(static_cast<std::int64_t>(plan.splits - 1) * plan.tiles_per_split, tiles);  // no empty split
  }
}

TEST(key_splits, a_least_count_of_one_leaves_the_occupancy_rule_as_it_was) {
  for (const std::int64_t n : {1000, 10000, 20000, 50000, 200000}) {
    const split_plan plan = plan_key_splits(blocks_of(n), blocks_of(n), kSlots, tile::kMaxSplits, tile::kMinTilesPerSplit);
    const split_plan same = plan_key_splits(blocks_of(n), blocks_of(n), kSlots, tile::kMaxSplits, tile::kMinTilesPerSplit, 1);
    EXPECT_EQ(plan.splits, same.splits) << n;
    EXPECT_EQ(plan.tiles_per_split, same.tiles_per_split) << n;
  }
  // n = 10⁴: 79 row blocks on 132 SMs, so the keys are split (5 splits of 16 tiles).
  EXPECT_EQ(plan_key_splits(79, 79, kSlots, tile::kMaxSplits, tile::kMinTilesPerSplit).splits, 5);
}

TEST(key_splits, a_least_count_gives_way_to_the_minimum_split_length) {
  // 10 key tiles of at least 4 per split allow 2 splits, however many are asked for.
  const split_plan plan = plan_key_splits(400, 10, kSlots, tile::kMaxSplits, 4, 6);
  EXPECT_EQ(plan.splits, 2);
  EXPECT_EQ(plan.tiles_per_split, 5);
}

TEST(key_splits, the_part_fastest_order_is_a_bijection_that_keeps_a_row_blocks_parts_together) {
  for (const int parts : {1, 2, 3, 5, 8}) {
    const std::int64_t row_blocks = 13;
    std::vector<int> seen(static_cast<std::size_t>(row_blocks * parts), 0);
    for (std::int64_t linear = 0; linear < row_blocks * parts; ++linear) {
      const grid_cell cell = part_fastest_cell(linear, parts);
      ASSERT_GE(cell.row_block, 0);
      ASSERT_LT(cell.row_block, row_blocks);
      ASSERT_GE(cell.part, 0);
      ASSERT_LT(cell.part, parts);
      ++seen[static_cast<std::size_t>(cell.row_block * parts + cell.part)];
      EXPECT_EQ(cell.row_block, linear / parts);  // consecutive CTAs: one row block's parts
    }
    for (const int count : seen) EXPECT_EQ(count, 1) << parts;
  }
  // One part: CTA x holds row block x, the grid's order before session 40.
  for (std::int64_t linear : {0, 1, 390}) EXPECT_EQ(part_fastest_cell(linear, 1).row_block, linear);
}

TEST(key_splits, the_streamed_key_pairs_start_at_half_a_wave_of_row_blocks) {
  EXPECT_TRUE(streamed_key_pairs_pay(blocks_of(10000), kSlots));  // 79 row blocks, measured faster in pairs
  EXPECT_FALSE(streamed_key_pairs_pay(kSlots / 2 - 1, kSlots));
  EXPECT_TRUE(streamed_key_pairs_pay(kSlots / 2, kSlots));
  EXPECT_TRUE(streamed_key_pairs_pay(blocks_of(50000), kSlots));  // 391 row blocks
}

TEST(key_splits, the_key_pair_layout_shares_the_last_row_block_by_query_pairs) {
  // 10,000 rows: 79 row blocks × 5 splits (the last split 15 tiles of 16): 195 + 2 + 1 clusters.
  EXPECT_TRUE(last_split_short(79, 5, 16));
  EXPECT_FALSE(last_split_short(80, 5, 16));
  EXPECT_FALSE(last_split_short(391, 1, 391));
  const key_pair_layout odd = make_key_pair_layout(79, 5, true, true);
  EXPECT_EQ(odd.key_pairs, 195);
  EXPECT_EQ(odd.query_pairs, 2);
  EXPECT_EQ(odd.singles, 1);
  EXPECT_EQ(2 * odd.clusters(), 396);  // three waves of 132, not 400
  // An even split count pairs every leftover cell, unless the last split is short.
  EXPECT_EQ(make_key_pair_layout(79, 4, false, true).query_pairs, 2);
  EXPECT_EQ(make_key_pair_layout(79, 4, false, true).singles, 0);
  EXPECT_EQ(make_key_pair_layout(79, 4, true, true).query_pairs, 1);
  EXPECT_EQ(make_key_pair_layout(79, 4, true, true).singles, 2);
  // One split: the last row block alone with a ghost; an even row-block count: key pairs only.
  EXPECT_EQ(make_key_pair_layout(391, 1, false, true).clusters(), 196);
  EXPECT_EQ(make_key_pair_layout(391, 1, false, true).singles, 1);
  const key_pair_layout even = make_key_pair_layout(80, 5, true, true);
  EXPECT_EQ(even.key_pairs, 200);
  EXPECT_EQ(even.query_pairs + even.singles, 0);
  // Without query pairs every leftover cell is a single (session 41's layout): 400 CTAs at 10,000 rows.
  const key_pair_layout ghosts = make_key_pair_layout(79, 5, true, false);
  EXPECT_EQ(ghosts.query_pairs, 0);
  EXPECT_EQ(ghosts.singles, 5);
  EXPECT_EQ(2 * ghosts.clusters(), 400);
  // Every cell of the row blocks × splits grid is in one cluster: 2 per pair, 1 per single.
  for (std::int64_t row_blocks : {1, 2, 3, 79, 157, 391})
    for (int splits : {1, 2, 3, 4, 5, 6})
      for (bool short_last : {false, true})
        for (bool query_pairs : {false, true}) {
          const key_pair_layout l = make_key_pair_layout(row_blocks, splits, short_last, query_pairs);
          EXPECT_EQ(2 * (l.key_pairs + l.query_pairs) + l.singles, row_blocks * splits)
              << row_blocks << " " << splits << " " << short_last << " " << query_pairs;
        }
}

// The cells the clusters of a key-pairs launch take (key_pair_cell_of, what the kernel's
// pair_cta_work_of reads): every (row block, split) written by exactly one CTA, and the two CTAs of
// a cluster run the same key-tile count (their rings move together) and share what they multicast —
// a key pair one split, a query pair one row block, a single's ghost its partner's cell.
TEST(key_splits, the_key_pair_cells_cover_the_grid_once_with_matching_partners) {
  for (const int key_tiles : {1, 9, 21, 24, 79, 391})
    for (const std::int64_t row_blocks : {1, 2, 3, 21, 79, 80})
      for (const int splits : {1, 2, 3, 4, 5, 6}) {
        if (splits > key_tiles) continue;
        const int per_split = (key_tiles + splits - 1) / splits;
        if ((key_tiles + per_split - 1) / per_split != splits) continue;  // not a count plan_key_splits makes
        auto tiles_of = [&](int split) {
          return std::max(0, std::min(key_tiles, (split + 1) * per_split) - split * per_split);
        };
        for (const bool query_pairs : {false, true}) {
          const key_pair_layout layout =
              make_key_pair_layout(row_blocks, splits, last_split_short(key_tiles, splits, per_split), query_pairs);
          std::vector<int> written(static_cast<std::size_t>(row_blocks * splits), 0);
          for (std::int64_t cluster = 0; cluster < layout.clusters(); ++cluster) {
            const key_pair_cell a = key_pair_cell_of(layout, row_blocks, splits, cluster, 0);
            const key_pair_cell b = key_pair_cell_of(layout, row_blocks, splits, cluster, 1);
            SCOPED_TRACE(testing::Message() << key_tiles << " tiles, " << row_blocks << " row blocks, " << splits
                                            << " splits, query pairs " << query_pairs << ", cluster " << cluster);
            ASSERT_FALSE(a.ghost);
            ASSERT_LT(a.row_block, row_blocks);
            ASSERT_LT(b.row_block, row_blocks);
            EXPECT_EQ(tiles_of(a.split), tiles_of(b.split));
            EXPECT_EQ(a.shares_queries, b.shares_queries);
            if (b.ghost) {
              EXPECT_EQ(b.row_block, a.row_block);
              EXPECT_EQ(b.split, a.split);
            } else if (a.shares_queries) {
              EXPECT_EQ(a.row_block, b.row_block);
              EXPECT_TRUE(query_pairs);
            } else {
              EXPECT_EQ(a.split, b.split);
            }
            ++written[static_cast<std::size_t>(a.row_block * splits + a.split)];
            if (!b.ghost) ++written[static_cast<std::size_t>(b.row_block * splits + b.split)];
          }
          for (std::size_t cell = 0; cell < written.size(); ++cell) EXPECT_EQ(written[cell], 1) << "cell " << cell;
        }
      }
}

}  // namespace
