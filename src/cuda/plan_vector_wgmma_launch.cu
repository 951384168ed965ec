// Host launch of the Hopper one-column plan pass (plan_vector_wgmma_launch.hpp).
#include "cuda/plan_vector_wgmma_launch.hpp"

#include <type_traits>

#include "cuda/kernel_occupancy.hpp"
#include "cuda/key_splits.hpp"
#include "cuda/plan_mma_kernel.cuh"
#include "cuda/plan_vector_wgmma_kernel.cuh"
#include "cuda/softmin_launch.hpp"
#include "cuda/tensor_map.hpp"
#include "cuda/tile_config.hpp"

namespace flashsinkhorn::detail {
namespace {

namespace geo = kernels::plan_vector_wgmma;

// 32-byte k-steps per stored row (a tf32 value or two bf16 values per 32-bit word).
int steps_of(precision mode, std::int64_t padded_dim) {
  const std::int64_t words = mode == precision::bf16 ? padded_dim / 2 : padded_dim;
  return static_cast<int>(words * 4 / wgmma::kStepBytes);
}

// The kernel instance for rows of `steps` k-steps (rows are padded to 16 words: steps is even),
// with or without values.
template <class Op, bool kValues>
auto kernel_for(int steps) {
  using kernel_type = decltype(&kernels::plan_vector_wgmma_kernel<Op, 2, kValues>);
  static_assert(tile::kWgmmaMaxRowWords / 8 <= 8, "extend the table below");
  switch (steps) {
    case 2: return &kernels::plan_vector_wgmma_kernel<Op, 2, kValues>;
    case 4: return &kernels::plan_vector_wgmma_kernel<Op, 4, kValues>;
    case 6: return &kernels::plan_vector_wgmma_kernel<Op, 6, kValues>;
    case 8: return &kernels::plan_vector_wgmma_kernel<Op, 8, kValues>;
    default: return kernel_type{nullptr};
  }
}

// What a launch needs: the kernel instance, its shared memory and ring depth, its key splits.
struct vector_launch {
  int stages = 0;
  int shared_bytes = 0;
  int threads = tile::kWgmmaThreads;
  split_plan splits;
};

template <class Op>
vector_launch plan_launch(precision mode, const device_cloud_view& rows, const device_cloud_view& keys, int sm_count,
                          int max_shared_bytes) {
  vector_launch out;
  out.stages = plan_vector_wgmma_stages(mode, rows.padded_dim, max_shared_bytes);
  if (out.stages == 0) return out;
  const int steps = steps_of(mode, rows.padded_dim);
  out.shared_bytes = geo::shared_bytes(steps, out.stages);
  const int ctas_per_sm = occupancy(kernel_for<Op, true>(steps), out.threads, out.shared_bytes);
  out.splits = plan_key_splits((rows.count + tile::kWgmmaBlockM - 1) / tile::kWgmmaBlockM,
                               keys.padded_count / wgmma::kTileN, static_cast<std::int64_t>(sm_count) * ctas_per_sm,
                               tile::kMaxSplits, tile::kMinTilesPerSplit);
  return out;
}

template <class Op>
bool launch(precision mode, const plan_rows_launch_args& args, cudaStream_t stream, cudaError_t& status) {
  const device_cloud_view& rows = args.rows;
  const device_cloud_view& keys = args.keys;
  const vector_launch plan = plan_launch<Op>(mode, rows, keys, args.sm_count, args.max_shared_bytes);
  if (plan.stages == 0) return false;
  const int steps = steps_of(mode, rows.padded_dim);
  const std::int64_t words = steps * wgmma::kStepBytes / 4;
  CUtensorMap rows_map, keys_map;
  if (!make_panel_tensor_map(&rows_map, rows.points, words, rows.padded_count, tile::kWgmmaBlockM) ||
      !make_panel_tensor_map(&keys_map, keys.points, words, keys.padded_count, wgmma::kTileN))
    return false;

  kernels::plan_mma_params p{};
  p.key_bias = args.bias_scratch;
  p.values_t = args.k == 1 ? args.values_scratch : nullptr;  // k = 0: the LSE-only pass
  p.row_scaled_sq_norm = rows.scaled_sq_norm;
  p.lse = args.lse;
  p.weighted = args.k == 1 ? args.weighted : nullptr;
  p.rows = rows.count;
  p.keys = keys.count;
  p.keys_padded = keys.padded_count;
  p.k = args.k;
  p.score_scale_log2 = static_cast<float>(2.0 * args.cost_scale / args.eps * 1.44269504088896340736);
  p.eps = args.eps;
  split_plan splits = plan.splits;
  if (kernels::plan_vector_partial_bytes_of(rows.padded_count, splits.splits) > args.partial_scratch_capacity)
    splits = split_plan{};
  if (splits.splits > 1) {
    p.partials = static_cast<kernels::plan_vector_partial*>(args.partial_scratch);
    p.rows_padded = rows.padded_count;
    p.tiles_per_split = splits.tiles_per_split;
  }
  const auto kernel = args.k == 1 ? kernel_for<Op, true>(steps) : kernel_for<Op, false>(steps);
  status = allow_shared(kernel, plan.shared_bytes);
  if (status != cudaSuccess) return true;
  const dim3 grid(static_cast<unsigned>((rows.count + tile::kWgmmaBlockM - 1) / tile::kWgmmaBlockM),
                  static_cast<unsigned>(splits.splits));
  kernel<<<grid, plan.threads, plan.shared_bytes, stream>>>(p, plan.stages, rows_map, keys_map);
  status = cudaGetLastError();
  if (status != cudaSuccess || splits.splits <= 1) return true;
  constexpr int kCombineThreads = 256;
  kernels::plan_vector_combine_kernel<><<<static_cast<unsigned>((rows.count + kCombineThreads - 1) / kCombineThreads),
                                        kCombineThreads, 0, stream>>>(p, splits.splits);
  status = cudaGetLastError();
  return true;
}

}  // namespace

int plan_vector_wgmma_stages(precision mode, std::int64_t padded_dim, int max_shared_bytes) {
  if ((mode != precision::tf32 && mode != precision::bf16) || !wgmma_available(mode)) return 0;
  const std::int64_t words = mode == precision::bf16 ? padded_dim / 2 : padded_dim;
  if (words <= 0 || words > tile::kWgmmaMaxRowWords || words % 16 != 0) return 0;
  const int steps = steps_of(mode, padded_dim);
  // Two CTAs per SM share its shared memory, less the 1 KiB the hardware reserves per CTA.
  const int budget = (max_shared_bytes + 1024) / tile::kWgmmaCtasPerSm - 1024;
  for (int stages = tile::kWgmmaMaxStages; stages >= tile::kWgmmaMinStages; --stages)
    if (geo::shared_bytes(steps, stages) <= budget) return stages;
  return 0;
}

std::int64_t plan_vector_wgmma_partial_bytes(precision mode, const device_cloud_view& rows,
                                             const device_cloud_view& keys, int sm_count, int max_shared_bytes) {
  const vector_launch plan =
      mode == precision::bf16
          ? plan_launch<kernels::wgmma_bf16_operands>(mode, rows, keys, sm_count, max_shared_bytes)
          : plan_launch<kernels::wgmma_tf32_operands>(mode, rows, keys, sm_count, max_shared_bytes);
  return plan.stages == 0 ? 0 : kernels::plan_vector_partial_bytes_of(rows.padded_count, plan.splits.splits);
}

bool launch_plan_vector_wgmma(precision mode, const plan_rows_launch_args& args, cudaStream_t stream,
                              cudaError_t& status) {
  if (args.k > 1 || args.cost != nullptr || args.stored_directions != nullptr) return false;
  if (mode == precision::bf16) return launch<kernels::wgmma_bf16_operands>(mode, args, stream, status);
  if (mode == precision::tf32) return launch<kernels::wgmma_tf32_operands>(mode, args, stream, status);
  return false;
}

}  // namespace flashsinkhorn::detail
