// The bits of a value as another type of the same size, on the host and in CUDA kernels alike (the
// CUDA sources are C++17: no std::bit_cast). memcpy between locals is a register move on both.
#pragma once

#include <cstring>

#include "math/host_device.hpp"

namespace flashsinkhorn::math {

template <class To, class From>
FS_HOST_DEVICE To bit_cast(const From& from) {
  static_assert(sizeof(To) == sizeof(From), "bit_cast between types of one size");
  To to;
  std::memcpy(&to, &from, sizeof to);
  return to;
}

}  // namespace flashsinkhorn::math
