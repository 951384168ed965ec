// How the streamed Hopper plan pass pairs its CTAs (plan_wgmma_streamed_kernel.cuh): not at all, in
// clusters of two value tiles sharing every panel by multicast, or in clusters of two that each
// multiply half of the panels and add their partial scores (score_exchange.cuh).
#pragma once

namespace flashsinkhorn::detail {

enum class plan_pairing { none, multicast, split_scores };

}  // namespace flashsinkhorn::detail
