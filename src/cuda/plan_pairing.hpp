// How the streamed Hopper plan pass pairs its CTAs (plan_wgmma_streamed_kernel.cuh): not at all, in
// clusters of two value tiles sharing every panel by multicast, or in clusters of two that each
// multiply half of the panels and add their partial scores (score_exchange.cuh).
#pragma once

namespace flashsinkhorn::detail {

enum class plan_pairing { none, multicast, split_scores };

// The pairing a launch runs, given the one chosen (FLASHSINKHORN_PLAN_CLUSTER_PAIRS, by mode): none
// where a row block has an odd number of value tiles (a pair holds two of one row block), and
// multicast instead of split where there is one panel (nothing to split) or the ring leaves no room
// for the 64-KiB inbox (`inbox_fits`).
constexpr plan_pairing plan_pairing_for(plan_pairing chosen, long long value_tiles, int panels, bool inbox_fits) {
  if (value_tiles % 2 != 0) return plan_pairing::none;
  if (chosen == plan_pairing::split_scores && (panels < 2 || !inbox_fits)) return plan_pairing::multicast;
  return chosen;
}

}  // namespace flashsinkhorn::detail
