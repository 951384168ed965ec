// Stages the values of a plan pass for plan_mma_kernel.cuh: V (keys, k) float64 row-major →
// Vᵀ (columns_padded, keys_padded) in the operand format of the precision mode, zeros in the
// padding. tf32 and bf16 round to nearest even (math/round_operand.hpp, as the points were on
// upload); fp32 keeps the float, which the 3×TF32 product splits.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "math/round_operand.hpp"

namespace flashsinkhorn::detail::kernels {

enum class value_format { fp32, tf32, bf16 };

template <value_format kFormat>
using staged_value_t = std::conditional_t<kFormat == value_format::bf16, __nv_bfloat16, float>;

// One thread per staged element, keys fastest (coalesced writes; the reads are strided by k and
// served by L2, the neighbouring columns reading the same lines).
template <value_format kFormat>
__global__ void stage_values_kernel(staged_value_t<kFormat>* values_t, const double* values, std::int64_t keys,
                                    std::int64_t keys_padded, std::int64_t k, std::int64_t columns_padded) {
  const std::int64_t index = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (index >= columns_padded * keys_padded) return;
  const std::int64_t column = index / keys_padded;
  const std::int64_t key = index % keys_padded;
  const float value = column < k && key < keys ? static_cast<float>(values[key * k + column]) : 0.f;
  if constexpr (kFormat == value_format::bf16)
    values_t[index] = __float2bfloat16_rn(math::round_to_bf16(value));
  else if constexpr (kFormat == value_format::tf32)
    values_t[index] = math::round_to_tf32(value);
  else
    values_t[index] = value;
}

}  // namespace flashsinkhorn::detail::kernels
