// The producer's copies of the copy-engine wgmma kernels (softmin_wgmma_tma_kernel.cuh,
// softmin_wgmma_ws_kernel.cuh): whole panels through the tensor maps of tensor_map.hpp, each
// group of copies completing on one barrier with its byte count announced first.
//
// A partial last panel (row words not a multiple of 32) still counts a whole 32-word box per row:
// the copy engine fills the columns past the row's end with zeros (never read by the MMAs).
#pragma once

#include <cuda.h>

#include <cstdint>

#include "cuda/tile_config.hpp"
#include "cuda/tma.cuh"
#include "cuda/wgmma.cuh"

namespace flashsinkhorn::detail::kernels {

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900

// The CTA's query block: kPanels panels of kWgmmaBlockM rows starting at `row_block0`.
template <int kPanels>
__device__ __forceinline__ void load_query_block(unsigned char* query, const CUtensorMap* rows_map,
                                                 std::int64_t row_block0, std::uint64_t* barrier) {
  tma::arrive_expect_bytes(barrier, kPanels * tile::kWgmmaBlockM * wgmma::kPanelRowBytes);
#pragma unroll
  for (int c = 0; c < kPanels; ++c)
    tma::load_2d(query + c * tile::kWgmmaBlockM * wgmma::kPanelRowBytes, rows_map, c * wgmma::kPanelWords,
                 static_cast<int>(row_block0), barrier);
}

// Key tile at `key0`: kPanels panels of kTileN rows into `stage`, its kTileN β values into `bias`.
template <int kPanels>
__device__ __forceinline__ void load_key_tile(unsigned char* stage, float* bias, const CUtensorMap* keys_map,
                                              const float* key_bias, int key0, std::uint64_t* barrier) {
  constexpr std::uint32_t kKeyBytes = kPanels * wgmma::kTileN * wgmma::kPanelRowBytes;
  constexpr std::uint32_t kBiasBytes = wgmma::kTileN * 4;
  tma::arrive_expect_bytes(barrier, kKeyBytes + kBiasBytes);
#pragma unroll
  for (int c = 0; c < kPanels; ++c)
    tma::load_2d(stage + c * wgmma::kTileN * wgmma::kPanelRowBytes, keys_map, c * wgmma::kPanelWords, key0, barrier);
  tma::load_1d(bias, key_bias + key0, kBiasBytes, barrier);
}

#endif

}  // namespace flashsinkhorn::detail::kernels
