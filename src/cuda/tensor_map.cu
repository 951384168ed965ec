// See tensor_map.hpp.
#include "cuda/tensor_map.hpp"

#include <cuda_runtime.h>
#include <cudaTypedefs.h>

#include "cuda/wgmma.cuh"

namespace flashsinkhorn::detail {
namespace {

PFN_cuTensorMapEncodeTiled_v12000 encode_tiled() {
  static const PFN_cuTensorMapEncodeTiled_v12000 function = [] {
    void* pointer = nullptr;
    cudaDriverEntryPointQueryResult found{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &pointer, 12000, cudaEnableDefault, &found) !=
            cudaSuccess ||
        found != cudaDriverEntryPointSuccess) {
      (void)cudaGetLastError();
      pointer = nullptr;
    }
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(pointer);
  }();
  return function;
}

}  // namespace

bool make_panel_tensor_map(CUtensorMap* map, const void* base, std::int64_t row_words, std::int64_t rows,
                           int box_rows) {
  const PFN_cuTensorMapEncodeTiled_v12000 encode = encode_tiled();
  if (encode == nullptr) return false;
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(row_words), static_cast<cuuint64_t>(rows)};
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(row_words) * 4};  // bytes between rows
  const cuuint32_t box[2] = {static_cast<cuuint32_t>(wgmma::kPanelWords), static_cast<cuuint32_t>(box_rows)};
  const cuuint32_t element_strides[2] = {1, 1};
  // Words travel as FLOAT32 whatever they hold (tf32 values or pairs of bf16): the copy engine
  // moves bytes, and rows past the end of the tensor arrive as zeros.
  return encode(map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, const_cast<void*>(base), dims, strides, box, element_strides,
                CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

}  // namespace flashsinkhorn::detail
