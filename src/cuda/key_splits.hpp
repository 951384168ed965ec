// How many key splits a streamed pass uses (FlashDecoding): with few row blocks the key range of
// each row block is cut into splits that run as separate CTAs, each leaving a partial state
// (max, sums) per row, merged after them (the softmin: by the row block's last CTA, finish_block;
// the plan passes: by a combine kernel). The count minimises
// (waves of CTAs) × (key tiles per CTA + 1): 1,000 rows are 8 row blocks, so the keys are cut until
// the SMs are busy; 50,000 rows may still gain from a split that rounds the last wave up. Used by
// the softmin half-steps (softmin_launch.cu), the one-column plan passes and the float64 SIMT pass
// with any number of value columns (plan_rows_launch.cu).
// The streamed softmin kernels ask for a least count as well (streamed_query_splits).
#pragma once

#include <algorithm>
#include <cstdint>

#include "math/host_device.hpp"

namespace flashsinkhorn::detail {

struct split_plan {
  int splits = 1;
  int tiles_per_split = 1;
  int key_tiles = 1;
  int row_blocks = 1;
};

// The cell of a (row blocks × parts) grid that the CTA launched `linear`-th takes (linear =
// blockIdx.x + blockIdx.y·gridDim.x), the part fastest: the `parts` CTAs of a row block run side by
// side, so the panels they all read (a streamed kernel's query block, for the softmin's key splits
// and the plan passes' value tiles) come from L2 for all but the first. A bijection of
// [0, row blocks · parts) onto the cells.
struct grid_cell {
  std::int64_t row_block;
  int part;
};

FS_HOST_DEVICE grid_cell part_fastest_cell(std::int64_t linear, int parts) {
  return {linear / parts, static_cast<int>(linear % parts)};
}

// `slots`: CTAs resident at once on the device (SMs × CTAs per SM); at most `max_splits` splits of
// at least `min_tiles` key tiles each, and at least `min_splits` where the keys allow that many.
inline split_plan plan_key_splits(std::int64_t row_blocks, std::int64_t key_tiles, std::int64_t slots, int max_splits,
                                  int min_tiles, int min_splits = 1) {
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
  auto split_into = [&](int wanted) {
    plan.tiles_per_split = (plan.key_tiles + wanted - 1) / wanted;
    plan.splits = (plan.key_tiles + plan.tiles_per_split - 1) / plan.tiles_per_split;
  };
  const int least = std::clamp(std::min(min_splits, plan.key_tiles / std::max(1, min_tiles)), 1, std::max(1, max_splits));
  split_into(least);
  double best = cost(plan.tiles_per_split, plan.splits);
  for (int wanted = least + 1; wanted <= max_splits; ++wanted) {
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

// The least key splits of a streamed softmin launch. Its CTAs read their whole query block
// (`query_block_bytes`, too large for shared memory) again for every key tile, so the blocks that
// the `slots` resident CTAs hold should stay in L2 (`budget_bytes` of it) or every tile re-reads
// them from HBM: at 5·10⁴ × 1,024 in tf32, 132 blocks of 512 KiB are 66 MiB against the H100's
// 50 MiB of L2, and the kernel ran at 45% of the TF32 floor where 512 coordinates ran at 65%
// (suite_h100_2026-12-06_s40a_cpp.jsonl). With the split fastest in the grid (cta_work_of) the
// resident CTAs hold ⌈slots / splits⌉ distinct blocks, each read from HBM once per key tile of
// its first split and from L2 by the others. 1 when the blocks fit or the budget is 0 (rule off).
inline int streamed_query_splits(std::int64_t row_blocks, std::int64_t slots, std::int64_t query_block_bytes,
                                 std::int64_t budget_bytes) {
  if (budget_bytes <= 0 || query_block_bytes <= 0) return 1;
  const std::int64_t blocks_that_fit = std::max<std::int64_t>(1, budget_bytes / query_block_bytes);
  const std::int64_t resident_blocks = std::min(std::max<std::int64_t>(1, row_blocks), std::max<std::int64_t>(1, slots));
  if (resident_blocks <= blocks_that_fit) return 1;
  return static_cast<int>((slots + blocks_that_fit - 1) / blocks_that_fit);
}

// The clusters of a key-pairs launch (softmin_wgmma_ws_streamed_kernel.cuh, pair_cta_work_of).
// Two row blocks of one split share its key panels: ⌊row blocks / 2⌋ · splits such clusters. With
// an odd row-block count the last row block is left over once per split, and its cells share the
// query panel instead: splits 2r, 2r + 1 in a cluster where their key ranges have as many tiles (the
// two rings must run the same loads), the rest alone with a ghost partner that loads and consumes
// but writes nothing. 79 row blocks × 5 splits (10,000 rows; 16 tiles a split, the last 15) are 195
// key pairs, 2 query pairs and one single: 396 CTAs, three waves of 132 — with every leftover cell
// alone (session 41's layout, still the default) they were 400. Each cluster is two CTAs of the 1-D
// grid.
struct key_pair_layout {
  std::int64_t key_pairs = 0;  // clusters of two row blocks (of one split), the split fastest
  int query_pairs = 0;         // clusters of two splits of the last row block
  int singles = 0;             // clusters of one split of the last row block and a ghost
  FS_HOST_DEVICE std::int64_t clusters() const { return key_pairs + query_pairs + singles; }
};

// Whether the last of `splits` key ranges of `tiles_per_split` tiles has fewer than the others.
FS_HOST_DEVICE bool last_split_short(int key_tiles, int splits, int tiles_per_split) {
  return key_tiles - (splits - 1) * tiles_per_split < tiles_per_split;
}

// `last_split_short`: the last split has fewer key tiles than the others. Without `query_pairs`
// (FLASHSINKHORN_STREAMED_QUERY_PAIRS=off; on by default) every leftover cell is a single: session
// 41's ghost layout.
FS_HOST_DEVICE key_pair_layout make_key_pair_layout(std::int64_t row_blocks, int splits, bool last_split_short,
                                                    bool query_pairs) {
  key_pair_layout layout;
  layout.key_pairs = row_blocks / 2 * splits;
  if (row_blocks % 2 == 0) return layout;
  layout.singles = !query_pairs ? splits : splits % 2 == 1 ? 1 : (last_split_short ? 2 : 0);
  layout.query_pairs = (splits - layout.singles) / 2;
  return layout;
}

// The cell (row block, split) that rank `rank` of cluster `cluster` takes in `layout`'s order: the key
// pairs (rank r: row block 2q' + r of split s, q = (q', s) with the split fastest), then the last row
// block's query pairs (rank r: its split 2q'' + r), then its singles (the split alone; rank 1 a
// ghost that repeats rank 0's cell and writes nothing).
struct key_pair_cell {
  std::int64_t row_block = 0;
  int split = 0;
  bool shares_queries = false;  // a query pair: the two CTAs share the query panels, not the key panels
  bool ghost = false;
};

FS_HOST_DEVICE key_pair_cell key_pair_cell_of(const key_pair_layout& layout, std::int64_t row_blocks, int splits,
                                             std::int64_t cluster, unsigned rank) {
  if (cluster < layout.key_pairs) {
    const grid_cell pair = part_fastest_cell(cluster, splits);
    return {2 * pair.row_block + rank, pair.part, false, false};
  }
  const int leftover = static_cast<int>(cluster - layout.key_pairs);
  if (leftover < layout.query_pairs) return {row_blocks - 1, 2 * leftover + static_cast<int>(rank), true, false};
  return {row_blocks - 1, 2 * layout.query_pairs + (leftover - layout.query_pairs), false, rank == 1};
}

// Whether the warp-specialised streamed softmin runs in key pairs (clusters of two CTAs holding two
// row blocks of one split; each loads half of every key panel into both by multicast, so the keys'
// L2 traffic halves). The pair's pipelines wait for each other, so the pairs pay where the key
// stream binds and lose where a few row blocks are cut into many short key splits to fill the
// device. `slots`: CTAs resident at once. Measured on the H100 (2026-12-06, ms an iteration without
// / with pairs): 5·10⁴ rows (391 row blocks, 1–3 splits) × 512 tf32 19.85 / 16.69, bf16 9.83 / 9.34;
// × 1,024 tf32 46.3 / 34.6, bf16 19.9 / 17.6 (streamed_l2_ab_h100_2026-12-06_s42.json); 10⁴ rows (79
// row blocks, 5 splits, the last row block's splits in query pairs) × 512 tf32 0.819 / 0.737, bf16
// 0.451 / 0.421; × 1,024 tf32 1.564 / 1.458, bf16 0.824 / 0.777 (…_s43.json; with session 41's ghost
// CTAs instead of the query pairs they lost there: 0.816 / 0.891 at × 512 tf32); below, slower at
// every size measured: 8,000 rows (63 row blocks) × 512 tf32 0.451 / 0.473, bf16 0.260 / 0.265,
// × 1,024 bf16 0.448 / 0.478 (tf32 0.973 / 0.932 the one exception), 2,000–6,000 rows 3–14% slower
// (…_s43b.json). Hence from half a wave of row blocks (66 on 132 SMs, between the measured 63 and 79).
inline bool streamed_key_pairs_pay(std::int64_t row_blocks, std::int64_t slots) { return 2 * row_blocks >= slots; }

// One split when the scratch cannot hold the partial states of `splits` (`bytes_for(splits)`).
template <class BytesFor>
split_plan fit_splits_to_scratch(split_plan splits, std::int64_t capacity, BytesFor bytes_for) {
  if (bytes_for(splits.splits) > capacity) {
    splits.splits = 1;
    splits.tiles_per_split = splits.key_tiles;
  }
  return splits;
}

}  // namespace flashsinkhorn::detail
