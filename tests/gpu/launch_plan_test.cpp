// The launch plans of the Hopper kernels, checked on the host (no GPU needed, so these run in CI):
// every row width the library pads to gets a wgmma kernel whose ring fits the H200's shared memory
// at the CTAs per SM it is tuned for, and the padding rule gives the kernels whole k-steps/panels.
// (The first version of the resident kernel was admitted up to 96 words but fitted only 64 at two
// CTAs per SM: such rows silently fell back to the mma.sync kernel.)
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "cuda/kernel_variant.hpp"
#include "cuda/softmin_launch.hpp"
#include "cuda/tile_config.hpp"

namespace {

using flashsinkhorn::precision;
using namespace flashsinkhorn::detail;

// cudaDevAttrMaxSharedMemoryPerBlockOptin of the H200 (and H100): 227 KiB.
constexpr int kHopperSharedOptin = 232448;

TEST(launch_plan, every_padded_width_gets_a_fitting_wgmma_kernel) {
  for (const precision mode : {precision::tf32, precision::bf16}) {
    const int values_per_word = mode == precision::bf16 ? 2 : 1;
    // The resident kernel of this mode under FLASHSINKHORN_KERNEL (kernel_variant.hpp); the mma
    // variant has no wgmma plan to check.
    const wgmma_variant variant = selected_wgmma_variant(mode);
    if (variant == wgmma_variant::mma_sync) GTEST_SKIP() << "FLASHSINKHORN_KERNEL=mma";
    const std::string resident = variant == wgmma_variant::ws    ? "wgmma-ws"
                                 : variant == wgmma_variant::tma ? "wgmma-tma"
                                                                 : "wgmma";
    const std::string streamed = variant == wgmma_variant::cpasync ? "wgmma-streamed" : "wgmma-ws-streamed";
    for (std::int64_t d = 1; d <= 4096; d += (d < 300 ? 1 : 37)) {
      const std::int64_t padded = softmin_padded_dim(mode, d);
      SCOPED_TRACE("mode " + std::to_string(static_cast<int>(mode)) + ", d = " + std::to_string(d) +
                   ", padded " + std::to_string(padded));
      ASSERT_GE(padded, d);
      const std::int64_t words = padded / values_per_word;
      ASSERT_EQ(words % tile::kRowWordMultiple, 0);  // the mma.sync kernel reads rows in 16-word groups
      const wgmma_plan plan = softmin_wgmma_plan(mode, padded, kHopperSharedOptin);
      const std::string kernel = plan.kernel;
      if (words <= tile::kWgmmaMaxRowWords) {
        EXPECT_EQ(kernel, resident);
        EXPECT_GE(plan.stages, tile::kWgmmaMinStages);
      } else {
        EXPECT_EQ(kernel, streamed);
        EXPECT_EQ(words % 32, 0);  // whole panels
        EXPECT_GE(plan.stages, 2);
      }
      // Two CTAs per SM share 228 KiB, less 1 KiB reserved per CTA (the warp-specialised kernels:
      // one CTA).
      const bool warp_specialised = kernel == "wgmma-ws" || kernel == "wgmma-ws-streamed";
      const int ctas = warp_specialised ? 1
                       : kernel == "wgmma-streamed" ? tile::kWgmmaStreamedCtasPerSm
                                                    : tile::kWgmmaCtasPerSm;
      EXPECT_LE(ctas * (plan.shared_bytes + 1024), kHopperSharedOptin + 1024);
    }
  }
}

TEST(launch_plan, modes_without_a_wgmma_kernel) {
  EXPECT_STREQ(softmin_wgmma_plan(precision::fp32, 64, kHopperSharedOptin).kernel, "");
  EXPECT_STREQ(softmin_wgmma_plan(precision::fp64, 64, kHopperSharedOptin).kernel, "");
  EXPECT_EQ(softmin_padded_dim(precision::fp64, 7), 7);  // the fp64 kernel reads element-wise
}

}  // namespace
