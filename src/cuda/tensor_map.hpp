// Tensor maps for the copy engine (TMA): a cloud of rows of 32-bit words seen as a 2-d tensor
// (row_words × rows) whose boxes are one 128-byte-swizzled panel (32 words × box_rows rows), the
// layout of wgmma.cuh. Host only; the driver entry point is found through the runtime, so nothing
// links against libcuda.
#pragma once

#include <cuda.h>

#include <cstdint>

namespace flashsinkhorn::detail {

// Fills `map` for the row-major words at `base` (16-byte aligned; row_words a multiple of 4).
// Returns false when the driver offers no cuTensorMapEncodeTiled or rejects the shape.
bool make_panel_tensor_map(CUtensorMap* map, const void* base, std::int64_t row_words, std::int64_t rows,
                           int box_rows);

}  // namespace flashsinkhorn::detail
