// The instances of the fp32 narrow-row kernels (narrow_rows.cuh): for_narrow_dim(dim, make) calls
// make(std::integral_constant<int, D>) for the instance D that rows of `dim` ≤ 16 coordinates run.
#pragma once

#include <cstdint>
#include <type_traits>

#include "cuda/tile_config.hpp"

namespace flashsinkhorn::detail {

template <class Make>
auto for_narrow_dim(std::int64_t dim, Make make) -> decltype(make(std::integral_constant<int, 1>{})) {
  static_assert(tile::kSimtFp32MaxDim == 16, "extend the table below");
  if (dim <= 1) return make(std::integral_constant<int, 1>{});
  if (dim == 2) return make(std::integral_constant<int, 2>{});
  if (dim == 3) return make(std::integral_constant<int, 3>{});
  if (dim == 4) return make(std::integral_constant<int, 4>{});
  if (dim <= 8) return make(std::integral_constant<int, 8>{});
  if (dim <= 12) return make(std::integral_constant<int, 12>{});
  return make(std::integral_constant<int, 16>{});
}

}  // namespace flashsinkhorn::detail
