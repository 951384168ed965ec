// The launch plans of the Hopper kernels, checked on the host (no GPU needed, so these run in CI):
// every row width the library pads to gets a wgmma kernel whose ring fits the H200's shared memory
// at the CTAs per SM it is tuned for, and the padding rule gives the kernels whole k-steps/panels.
// (The first version of the resident kernel was admitted up to 96 words but fitted only 64 at two
// CTAs per SM: such rows silently fell back to the mma.sync kernel.)
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "cuda/cuda_backend.hpp"
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

// tf32 on rows of ≤ 2 coordinates takes the fp32 narrow kernel exactly where that kernel would take
// predicted references (softmin_launch.cu, tf32_runs_narrow): long key splits at d ≤ 2, never on wider
// rows (d = 3 since the wgmma kernel predicts too), never on short splits unless
// FLASHSINKHORN_NARROW_REFERENCE=predicted asks, never under =online. (The kernel's occupancy is read
// from the device: skipped without one.)
TEST(launch_plan, tf32_on_rows_of_at_most_two_coordinates_runs_the_narrow_kernel_where_it_predicts) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  constexpr int kSms = 132;  // the H100's and H200's
  const narrow_reference choice = narrow_reference_choice();
  auto kernel = [](std::int64_t d, std::int64_t n) {
    return std::string(softmin_kernel_name(precision::tf32, d, n, n, kSms, kHopperSharedOptin));
  };
  for (const std::int64_t d : {1, 2}) {
    SCOPED_TRACE("d = " + std::to_string(d));
    EXPECT_EQ(kernel(d, 50000) == "fma", choice != narrow_reference::online);  // 8+ tiles a key split
    EXPECT_EQ(kernel(d, 10000) == "fma", choice == narrow_reference::predicted);  // 5 tiles a key split
  }
  for (const std::int64_t d : {3, 4, 8, 16, 64}) EXPECT_NE(kernel(d, 50000), "fma") << "d = " << d;
  // bf16 keeps its tensor-core kernel; fp32 runs the narrow kernel at every size (with FMA dots).
  EXPECT_NE(std::string(softmin_kernel_name(precision::bf16, 3, 50000, 50000, kSms, kHopperSharedOptin)), "fma");
  if (fp32_fma_dots_for(softmin_padded_dim(precision::fp32, 3))) {
    EXPECT_EQ(std::string(softmin_kernel_name(precision::fp32, 3, 10000, 10000, kSms, kHopperSharedOptin)), "fma");
  }
}

}  // namespace
