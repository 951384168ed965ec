// Where a softmin kernel's predicted row references pay (FLASHSINKHORN_NARROW_REFERENCE=auto,
// kernel_variant.hpp): the rules softmin_launch.cu applies, host-only so that they are tested
// without a GPU (tests/gpu/predicted_reference_rule_test.cpp).
//
// A predicted reference is the LSE a row's previous potential implies, less a margin M; a CTA folds
// its key split against it and keeps the result when every row's sum lies in [2⁻⁶⁰, 3·10³⁸]
// (softmin_kernel.cuh, predicted_sum_usable), else folds the split again with the online maximum.
// A prediction is seldom wrong by the window's width, but a key split can hold almost none of a
// row's mass: at ε small against the costs a row's mass sits on its few nearest keys, and a split
// without them sums to 2^(−hundreds) against the row's LSE — under the guard, and the CTA pays two
// passes. So both rules ask for long splits, and on split rows for narrow ones.
#pragma once

#include <cstdint>

#include "cuda/key_splits.hpp"

namespace flashsinkhorn::detail {

inline constexpr std::int64_t kPredictedMaxDim = 8;
inline constexpr int kPredictedMinSplitTiles = 8;

// The fp32 narrow kernel (softmin_narrow_kernel.cuh). Measured on the H100 (fp32,
// x, y ~ N(0, I), ε = 0.1, ms per iteration, online / predicted, 2026-12-05,
// bench/results/narrow_reference_ab_h100_2026-12-05_s32.json; the H200's figures of 2026-12-04,
// whose files were lost, read the same within 2%):
//   rows of ≤ 4 coordinates: d = 3, n = 5·10⁴ 2.55 / 2.12; d = 4, n = 5·10⁴ 2.99 / 2.66;
//     d = 2, n = 10⁵ 8.37 / 6.99; d = 1, n = 10⁵ 6.62 / 5.66; d = 3, n = 2·10⁵ 36.0 / 29.7;
//     d = 3, n = 2·10⁴ 0.469 / 0.398;
//   wider rows lost: d = 8 3.35 / 5.06 (128 registers against 96 cost a CTA an SM), d = 12
//     4.89 / 8.83 at the same occupancy and d = 16 5.45 / 12.0 (n = 5·10⁴) — because their key
//     splits underflowed the guard (bench/studies/predicted_reference_window.py). With the margin of
//     kernel_variant.hpp (H200, 2026-12-05, narrow_reference_ab_margin_h200_2026-12-05_s33.json), at
//     M = 96 (the default) d = 8 takes 2.88 against 3.35 online and n = 2·10⁵, d = 8 43.6 against
//     51.8; d = 12 wins on the H200 (4.10 / 4.88) but not on the H100 (4.98 / 4.89,
//     narrow_reference_ab_margin_h100_2026-12-05_s34.json), so it stays online, and d = 16 loses at
//     every M (6.80 at M = 96 / 5.44: 168 registers, a CTA an SM);
//   short key splits lose: d = 3, n = 10⁴ (16 splits of 5 tiles) 0.169 / 0.175: a split that holds
//     almost none of a row's mass underflows its prediction (sum < 2⁻⁶⁰) and folds its keys again,
//     and the fewer keys a split has, the likelier it holds none near the row.
// The rule read the faster of the two in every row of that file.
constexpr bool narrow_prediction_pays(std::int64_t dim, const split_plan& plan) {
  return dim <= kPredictedMaxDim && plan.tiles_per_split >= kPredictedMinSplitTiles;
}

// The warp-specialised wgmma kernel (softmin_wgmma_ws_kernel.cuh, tf32 and bf16). Measured on the
// H100 (tf32, x, y ~ N(0, I), ε = 0.1, ms per iteration, online / predicted, 2026-12-05, b71a3e1,
// bench/results/wgmma_reference_ab_h100_2026-12-05_s35.json): d = 8: n = 10⁴ 0.140 / 0.117 (5 key
// splits of 16 tiles), 2·10⁴ 0.456 / 0.353, 5·10⁴ 2.41 / 1.70, 2·10⁵ 37.9 / 26.2; 5·10⁴, d = 16
// 2.45 / 1.69, d = 64 3.21 / 2.30 — rows of 5·10⁴ and more are not split (key_splits.hpp: 391 row
// blocks fill the 132 SMs), so the wide rows' wins say nothing about split ones. Split and wide they
// lose: at n = 10⁴, d = 64 (5 splits of 16 tiles) the kernel took 0.278 ms (tf32) and 0.231 (bf16)
// with predicted references (gpu_forward_h100_2026-12-05_s37.json), against 0.128 for bf16's
// two-CTA kernel with the online maximum in the same run and 0.155 / 0.136 for this kernel online
// on the H200 (gpu_forward_2026-11-30_session4.json). The guard computed exactly on the same data
// (bench/studies/predicted_reference_window.py --block-rows 128 --splits 1,5 --margins 96,
// bench/results/predicted_reference_window_wgmma_2026-12-05_s37_vm.json), the largest fraction of
// CTAs failing from the second iteration on, 5 splits of 16 tiles: d = 8 0, 16 2.8%, 24 27%,
// 32 83%, 64 100%; unsplit rows 0 at every width (whole rows' predictions stay within ±7 log₂
// units). A failing CTA folds its split twice, and prediction saves ~17–30% a pass (above). Timed on
// split rows with that rule (H100, 2026-12-06, e7c0a51, tf32 / bf16, online / predicted,
// bench/results/wgmma_reference_ab_h100_2026-12-06_s39.json): d = 8, n = 10⁴ (5 splits of 16
// tiles) 0.137 / 0.114 — predicted wins; d = 16, n = 10⁴ 0.138 / 0.162 — it loses (the study's
// 2.8% of failing CTAs, each folding twice, set the pace); d = 16, n = 2·10⁴ (5 splits of 32 tiles)
// 0.455 / 0.350 — it wins again; d = 32 0.148 / 0.221 and d = 64 0.171 / 0.275 at n = 10⁴ lose.
// So split rows predict up to d = 8 (kPredictedMaxDim) on any split of ≥ 8 tiles, and up to d = 16
// (the same kernel instance: both pad to 16 tf32 words) on splits of ≥ 32 tiles, where a split is
// likelier to hold some of each row's nearest keys. Re-timed with this rule on another H100 of the
// same kind (c992634, wgmma_reference_ab_h100_2026-12-06_s39b.json, tf32, auto / online / predicted):
// 10⁴ × 8 0.114 / 0.138 / 0.115; 2·10⁴ × 16 0.386 / 0.452 / 0.384; 10⁴ × 16 0.139 / 0.138 / 0.132 —
// there prediction won by 5% where the first run had it lose by 18%: the rule keeps the side whose
// worse case is smaller.
inline constexpr std::int64_t kWgmmaSplitPredictedMaxDim = 16;
inline constexpr int kWgmmaWideSplitMinTiles = 32;

constexpr bool wgmma_prediction_pays(std::int64_t dim, const split_plan& plan) {
  if (plan.tiles_per_split < kPredictedMinSplitTiles) return false;
  if (plan.splits == 1 || dim <= kPredictedMaxDim) return true;
  return dim <= kWgmmaSplitPredictedMaxDim && plan.tiles_per_split >= kWgmmaWideSplitMinTiles;
}

}  // namespace flashsinkhorn::detail
