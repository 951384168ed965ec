// How many key splits a streamed pass uses (FlashDecoding): with few row blocks the key range of
// each row block is cut into splits that run as separate CTAs, each leaving a partial state
// (max, sums) per row, merged after them (the softmin: by the row block's last CTA, finish_block;
// the one-column plan pass: by a combine kernel). The count minimises
// (waves of CTAs) × (key tiles per CTA + 1): 1,000 rows are 8 row blocks, so the keys are cut until
// the SMs are busy; 50,000 rows may still gain from a split that rounds the last wave up. Used by
// the softmin half-steps (softmin_launch.cu) and the one-column plan pass (plan_rows_launch.cu).
#pragma once

#include <algorithm>
#include <cstdint>

namespace flashsinkhorn::detail {

struct split_plan {
  int splits = 1;
  int tiles_per_split = 1;
  int key_tiles = 1;
  int row_blocks = 1;
};

// `slots`: CTAs resident at once on the device (SMs × CTAs per SM); at most `max_splits` splits of
// at least `min_tiles` key tiles each.
inline split_plan plan_key_splits(std::int64_t row_blocks, std::int64_t key_tiles, std::int64_t slots, int max_splits,
                                  int min_tiles) {
  split_plan plan;
  plan.row_blocks = static_cast<int>(std::max<std::int64_t>(1, row_blocks));
  plan.key_tiles = static_cast<int>(std::max<std::int64_t>(1, key_tiles));
  slots = std::max<std::int64_t>(1, slots);
  auto cost = [&](int tiles_per_split, int splits) {
    const std::int64_t ctas = static_cast<std::int64_t>(plan.row_blocks) * splits;
    const std::int64_t waves = (ctas + slots - 1) / slots;
    // + 1 tile: the fixed cost of a CTA (query load, epilogue, partial write).
    return static_cast<double>(waves) * (tiles_per_split + 1);
  };
  plan.tiles_per_split = plan.key_tiles;
  double best = cost(plan.key_tiles, 1);
  for (int wanted = 2; wanted <= max_splits; ++wanted) {
    if (plan.key_tiles < wanted * min_tiles) break;
    const int tiles_per_split = (plan.key_tiles + wanted - 1) / wanted;
    const int splits = (plan.key_tiles + tiles_per_split - 1) / tiles_per_split;
    const double c = cost(tiles_per_split, splits);
    if (c < 0.97 * best) {
      best = c;
      plan.splits = splits;
      plan.tiles_per_split = tiles_per_split;
    }
  }
  return plan;
}

}  // namespace flashsinkhorn::detail
