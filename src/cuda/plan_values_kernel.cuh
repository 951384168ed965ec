// Stages the values of a plan pass for plan_mma_kernel.cuh: V (keys, k) row-major, float64 (a
// caller's values) or float (the exact points of a point gradient), rows `value_stride` apart →
// Vᵀ (columns_padded, keys_padded) floats in the operand format of the P·V product, zeros in the
// padding: tf32 (the tf32 and bf16 modes) rounds to nearest even (math/round_operand.hpp, as the
// points were on upload); fp32 keeps the float, which the 3×TF32 product splits.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "math/round_operand.hpp"

namespace flashsinkhorn::detail::kernels {

enum class value_format { fp32, tf32 };

// With kPermuted (the Hopper plan kernel, plan_wgmma_kernel.cuh) every group of 8 keys is stored
// in the order its P·V k-step reads them: position t < 4 holds key 2t, position t + 4 key 2t + 1.
//
// One thread per staged element, keys fastest (coalesced writes; the reads are strided by k and
// served by L2, the neighbouring columns reading the same lines).
template <value_format kFormat, bool kPermuted, class Source>
__global__ void stage_values_kernel(float* values_t, const Source* values, std::int64_t value_stride,
                                    std::int64_t keys, std::int64_t keys_padded, std::int64_t k,
                                    std::int64_t columns_padded) {
  const std::int64_t index = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (index >= columns_padded * keys_padded) return;
  const std::int64_t column = index / keys_padded;
  const std::int64_t position = index % keys_padded;
  const std::int64_t in_group = position % 8;
  const std::int64_t key =
      kPermuted ? position - in_group + (in_group < 4 ? 2 * in_group : 2 * (in_group - 4) + 1) : position;
  const float value = column < k && key < keys ? static_cast<float>(values[key * value_stride + column]) : 0.f;
  values_t[index] = kFormat == value_format::tf32 ? math::round_to_tf32(value) : value;
}

}  // namespace flashsinkhorn::detail::kernels
