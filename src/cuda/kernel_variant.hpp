// Which variant of the Hopper (wgmma) softmin kernels runs. The compiled default comes from
// tile_config.hpp (kWgmmaTma, kWgmmaWs); for A/B runs (docs/cuda_backend.md) the
// environment variable FLASHSINKHORN_KERNEL names another:
//   mma      no wgmma: the mma.sync kernels (softmin_kernel.cuh)
//   cpasync  resident rows: cp.async loads, a CTA barrier per tile (softmin_wgmma_kernel.cuh)
//   tma      resident rows: copy-engine loads, per-stage barriers (softmin_wgmma_tma_kernel.cuh)
//   ws       warp-specialised, resident and streamed rows (softmin_wgmma_ws*_kernel.cuh)
//   wsrs     the same, the resident kernel with the query block in registers
// Rows wider than the resident limit take the cp.async streamed kernel unless ws/wsrs is chosen.
#pragma once

namespace flashsinkhorn::detail {

enum class wgmma_variant { mma_sync, cpasync, tma, ws, ws_rs };

// The variant a FLASHSINKHORN_KERNEL value names; null or empty: the compiled default. An unknown
// name throws invalid_argument listing the names above.
wgmma_variant parse_wgmma_variant(const char* name);

// The variant of this process: parse_wgmma_variant(FLASHSINKHORN_KERNEL), read once.
wgmma_variant selected_wgmma_variant();

// Its name as FLASHSINKHORN_KERNEL spells it.
const char* to_string(wgmma_variant variant);

}  // namespace flashsinkhorn::detail
