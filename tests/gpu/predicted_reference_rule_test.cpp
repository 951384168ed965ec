// Where the softmin kernels take predicted row references under FLASHSINKHORN_NARROW_REFERENCE=auto
// (predicted_reference_rule.hpp), on the key-split plans of the H100's and H200's 132 SMs: host
// only, so these run in CI.
#include <gtest/gtest.h>

#include <cstdint>

#include "cuda/key_splits.hpp"
#include "cuda/predicted_reference_rule.hpp"
#include "cuda/tile_config.hpp"

namespace {

using namespace flashsinkhorn::detail;

// The plan of the warp-specialised wgmma kernel (128 rows a CTA, 128 keys a tile, a CTA an SM) for
// n = m points on 132 SMs.
split_plan wgmma_plan_for(std::int64_t n) {
  const std::int64_t blocks = (n + 127) / 128;
  return plan_key_splits(blocks, blocks, 132, tile::kMaxSplits, tile::kMinTilesPerSplit);
}

TEST(predicted_reference_rule, wgmma_predicts_unsplit_rows_at_any_width) {
  const split_plan plan = wgmma_plan_for(50000);  // 391 row blocks fill the SMs: one split
  ASSERT_EQ(plan.splits, 1);
  for (const std::int64_t d : {3, 8, 16, 64, 128}) EXPECT_TRUE(wgmma_prediction_pays(d, plan)) << d;
}

TEST(predicted_reference_rule, wgmma_predicts_split_rows_only_when_narrow) {
  // n = 10⁴: 79 row blocks, 5 splits of 16 tiles. At d = 64 and ε = 0.1 a split without a row's
  // nearest keys underflows the guard and every CTA folded its keys twice (0.275 ms against 0.171
  // online); at d = 16 ~3% of the CTAs do: 0.162 against 0.138 in one H100 run, 0.132 against 0.138
  // in another (2026-12-06), so the online side, whose worse case is the smaller.
  const split_plan plan = wgmma_plan_for(10000);
  ASSERT_GT(plan.splits, 1);
  ASSERT_GE(plan.tiles_per_split, kPredictedMinSplitTiles);
  ASSERT_LT(plan.tiles_per_split, kWgmmaWideSplitMinTiles);
  EXPECT_TRUE(wgmma_prediction_pays(3, plan));
  EXPECT_TRUE(wgmma_prediction_pays(8, plan));  // 0.114 against 0.137
  EXPECT_FALSE(wgmma_prediction_pays(9, plan));
  EXPECT_FALSE(wgmma_prediction_pays(16, plan));
  EXPECT_FALSE(wgmma_prediction_pays(24, plan));  // 27% of the CTAs fail in the guard study
  EXPECT_FALSE(wgmma_prediction_pays(64, plan));  // all
}

TEST(predicted_reference_rule, wgmma_predicts_long_splits_up_to_sixteen_coordinates) {
  // n = 2·10⁴: 157 row blocks, 5 splits of 32 tiles: d = 16 0.350 ms predicted against 0.455 online.
  const split_plan plan = wgmma_plan_for(20000);
  ASSERT_GT(plan.splits, 1);
  ASSERT_GE(plan.tiles_per_split, kWgmmaWideSplitMinTiles);
  EXPECT_TRUE(wgmma_prediction_pays(8, plan));
  EXPECT_TRUE(wgmma_prediction_pays(16, plan));
  EXPECT_FALSE(wgmma_prediction_pays(17, plan));
  EXPECT_FALSE(wgmma_prediction_pays(64, plan));
}

TEST(predicted_reference_rule, short_splits_keep_the_online_maximum) {
  split_plan short_splits;
  short_splits.splits = 16;
  short_splits.tiles_per_split = kPredictedMinSplitTiles - 1;
  EXPECT_FALSE(wgmma_prediction_pays(3, short_splits));
  EXPECT_FALSE(narrow_prediction_pays(3, short_splits));
  split_plan few_tiles;  // one split, but too short to repay a fallback's second pass
  few_tiles.tiles_per_split = kPredictedMinSplitTiles - 1;
  EXPECT_FALSE(wgmma_prediction_pays(64, few_tiles));
}

TEST(predicted_reference_rule, the_narrow_kernel_predicts_up_to_its_width) {
  split_plan plan;
  plan.tiles_per_split = 64;
  EXPECT_TRUE(narrow_prediction_pays(1, plan));
  EXPECT_TRUE(narrow_prediction_pays(kPredictedMaxDim, plan));
  EXPECT_FALSE(narrow_prediction_pays(12, plan));  // lost on the H100 (4.98 against 4.89 ms)
}

}  // namespace
