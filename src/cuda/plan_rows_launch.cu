// Host launch of the plan pass (plan_rows_launch.hpp).
#include "cuda/plan_rows_launch.hpp"

#include <algorithm>
#include <type_traits>

#include "cuda/cluster_launch.hpp"
#include "cuda/kernel_occupancy.hpp"
#include "cuda/kernel_variant.hpp"
#include "cuda/key_splits.hpp"
#include "cuda/plan_gemm_pass.hpp"
#include "cuda/plan_mma_kernel.cuh"
#include "cuda/plan_rows_kernel.cuh"
#include "cuda/plan_points_narrow_launch.hpp"
#include "cuda/plan_values_kernel.cuh"
#include "cuda/plan_vector_narrow_launch.hpp"
#include "cuda/plan_vector_wgmma_launch.hpp"
#include "cuda/plan_wgmma_kernel.cuh"
#include "cuda/plan_wgmma_streamed_kernel.cuh"
#include "cuda/softmin_kernel.cuh"
#include "cuda/softmin_wgmma_kernel.cuh"
#include "cuda/tensor_map.hpp"

namespace flashsinkhorn::detail {
namespace {

constexpr int kElementwiseThreads = 256;

unsigned blocks_for(std::int64_t count) {
  return static_cast<unsigned>((count + kElementwiseThreads - 1) / kElementwiseThreads);
}

std::int64_t value_columns_padded(std::int64_t k) {
  return (k + kernels::plan_tile::kValueCols - 1) / kernels::plan_tile::kValueCols * kernels::plan_tile::kValueCols;
}
static_assert(kernels::plan_tile::kValueCols == kernels::plan_wgmma::kValueCols,
              "both plan kernels read the same staged Vᵀ tiles");

std::int64_t row_words(precision mode, std::int64_t padded_dim) {
  return mode == precision::bf16 ? padded_dim / 2 : padded_dim;
}

// The SIMT pass's value columns per thread: 0 for k ≤ 1 without directions (the register instance),
// else the narrowest chunk (kGroups × that) that holds k, kMaxColumnsPerThread beyond: every chunk
// repeats the scores, so wide values pay them once per 128 columns.
int simt_columns_per_thread(std::int64_t k, bool quadratic) {
  using namespace kernels::plan_rows;
  return k <= 1 && !quadratic ? 0 : k <= kGroups ? 1 : k <= 2 * kGroups ? 2 : k <= 4 * kGroups ? 4 : kMaxColumnsPerThread;
}

std::int64_t simt_column_chunks(std::int64_t k, int columns_per_thread) {
  const std::int64_t chunk = static_cast<std::int64_t>(kernels::plan_rows::kGroups) * std::max(1, columns_per_thread);
  return std::max<std::int64_t>(1, (k + chunk - 1) / chunk);
}

// Its dynamic shared memory: the value tiles only where the pass has values.
int simt_shared_bytes(std::int64_t k, int columns_per_thread) {
  return kernels::plan_rows_shared_bytes(k > 0 ? columns_per_thread : 0);
}

template <class Point>
using simt_kernel_t = void (*)(kernels::plan_rows_params<Point>);

template <class Point, bool kByEx2>
simt_kernel_t<Point> simt_kernel_with(int columns_per_thread, bool quadratic) {
  using kernels::plan_rows_kernel;
  using kernels::plan_rows::kMaxColumnsPerThread;
  switch (columns_per_thread) {
    case 0: return plan_rows_kernel<Point, 0, false, kByEx2>;
    case 1: return quadratic ? plan_rows_kernel<Point, 1, true, kByEx2> : plan_rows_kernel<Point, 1, false, kByEx2>;
    case 2: return quadratic ? plan_rows_kernel<Point, 2, true, kByEx2> : plan_rows_kernel<Point, 2, false, kByEx2>;
    case 4: return quadratic ? plan_rows_kernel<Point, 4, true, kByEx2> : plan_rows_kernel<Point, 4, false, kByEx2>;
    default:
      return quadratic ? plan_rows_kernel<Point, kMaxColumnsPerThread, true, kByEx2>
                       : plan_rows_kernel<Point, kMaxColumnsPerThread, false, kByEx2>;
  }
}

// Whether a pass on points stored as Point takes its weights' e^x by math::exp_by_exp2: float points
// (the fp32 mode) as this process chooses (kernel_variant.hpp, fp32_pass_exp_by_ex2), as its narrow
// one-column pass does; double points never.
template <class Point>
bool weights_by_ex2() {
  return std::is_same_v<Point, float> && fp32_pass_exp_by_ex2();
}

// (by_ex2 instances for float points only: double points never take them.)
template <class Point>
simt_kernel_t<Point> simt_kernel(int columns_per_thread, bool quadratic, bool by_ex2) {
  if constexpr (std::is_same_v<Point, float>) {
    if (by_ex2) return simt_kernel_with<Point, true>(columns_per_thread, quadratic);
  }
  return simt_kernel_with<Point, false>(columns_per_thread, quadratic);
}

// The key splits of the SIMT pass with k value columns (0: none; key_splits.hpp): 64-row blocks ×
// column chunks against 64-key tiles, as many CTAs of the instance as fit on an SM. 1,000 rows are
// 16 row blocks on 132 SMs; 10,000 rows with 64 columns 157 CTAs of one an SM. A split needs 2
// tiles, not the tensor-core passes' 4: a SIMT tile is 64·64·(d + k) float64 FMAs against the
// 24 + 8k bytes a row its split leaves.
template <class Point>
split_plan plan_simt_splits(const device_cloud_view& rows, const device_cloud_view& keys, std::int64_t k,
                            bool quadratic, int sm_count) {
  using namespace kernels::plan_rows;
  constexpr int kMinTilesPerSplit = 2;
  const int columns_per_thread = simt_columns_per_thread(k, quadratic);
  const int ctas_per_sm = occupancy(simt_kernel<Point>(columns_per_thread, quadratic, weights_by_ex2<Point>()), kThreads,
                                    simt_shared_bytes(k, columns_per_thread));
  return plan_key_splits((rows.count + kRows - 1) / kRows * simt_column_chunks(k, columns_per_thread),
                         (keys.count + kKeys - 1) / kKeys, static_cast<std::int64_t>(sm_count) * ctas_per_sm,
                         tile::kMaxSplits, kMinTilesPerSplit);
}

// The partial states of `splits` key splits: plan_rows_partial, then the k columns' sums.
std::int64_t simt_partial_bytes(std::int64_t rows, std::int64_t k, int splits) {
  const auto per_row = static_cast<std::int64_t>(sizeof(kernels::plan_rows_partial) + k * sizeof(double));
  return splits > 1 ? splits * rows * per_row : 0;
}

// The SIMT kernels' parameters from a launch's arguments (no key splits yet).
template <class Point>
kernels::plan_rows_params<Point> simt_params(const plan_rows_launch_args& args) {
  kernels::plan_rows_params<Point> p{};
  p.rows_points = static_cast<const Point*>(args.rows.points);
  p.key_points = static_cast<const Point*>(args.keys.points);
  p.row_scaled_sq_norm = args.rows.scaled_sq_norm;
  p.key_scaled_sq_norm = args.keys.scaled_sq_norm;
  p.key_log_weights = args.keys.log_weights;
  p.key_potential = args.key_potential;
  p.values = args.values;
  p.values_stride = args.values_stride > 0 ? args.values_stride : args.k;
  p.directions = args.directions;
  p.key_directions = args.key_directions;
  p.lse = args.lse;
  p.weighted = args.k > 0 ? args.weighted : nullptr;
  p.cost = args.cost;
  p.rows = args.rows.count;
  p.keys = args.keys.count;
  p.dim = args.rows.dim;
  p.padded_dim = args.rows.padded_dim;
  p.k = args.k;
  p.cost_scale = args.cost_scale;
  p.eps = args.eps;
  return p;
}

// The SIMT pass (plan_rows_kernel.cuh) on points stored as Point; its keys split where the partial
// scratch holds the states (plan_rows_combine_kernel merges them). by_ex2: the weights' e^x by
// math::exp_by_exp2 (weights_by_ex2).
template <class Point>
cudaError_t launch_plan_simt(const plan_rows_launch_args& args, cudaStream_t stream,
                             bool by_ex2 = weights_by_ex2<Point>()) {
  kernels::plan_rows_params<Point> p = simt_params<Point>(args);
  using namespace kernels::plan_rows;
  const std::int64_t k = p.weighted != nullptr ? args.k : 0;  // value columns
  const bool quadratic = p.directions != nullptr;
  const int columns_per_thread = simt_columns_per_thread(k, quadratic);
  const split_plan splits =
      fit_splits_to_scratch(plan_simt_splits<Point>(args.rows, args.keys, k, quadratic, args.sm_count),
                            args.partial_scratch_capacity, [&](int count) { return simt_partial_bytes(p.rows, k, count); });
  p.tiles_per_split = splits.tiles_per_split;
  p.splits = splits.splits;
  if (splits.splits > 1) {
    p.partials = static_cast<kernels::plan_rows_partial*>(args.partial_scratch);
    p.partial_weighted = reinterpret_cast<double*>(p.partials + splits.splits * p.rows);
  }
  const dim3 blocks(static_cast<unsigned>((args.rows.count + kRows - 1) / kRows),
                    static_cast<unsigned>(simt_column_chunks(k, columns_per_thread)),
                    static_cast<unsigned>(splits.splits));
  const simt_kernel_t<Point> kernel = simt_kernel<Point>(columns_per_thread, quadratic, by_ex2);
  const int shared_bytes = simt_shared_bytes(k, columns_per_thread);
  if (const cudaError_t status = allow_shared(kernel, shared_bytes); status != cudaSuccess) return status;
  kernel<<<blocks, kThreads, shared_bytes, stream>>>(p);
  if (const cudaError_t status = cudaGetLastError(); status != cudaSuccess || splits.splits <= 1) return status;
  constexpr int kCombineThreads = 256;
  const std::int64_t combined = p.rows * std::max<std::int64_t>(1, k);  // a thread per row and column
  kernels::plan_rows_combine_kernel<Point>
      <<<static_cast<unsigned>((combined + kCombineThreads - 1) / kCombineThreads), kCombineThreads, 0, stream>>>(p);
  return cudaGetLastError();
}

// lse by the SIMT pass on the same points (its LSE-only instance, with libdevice's e^x whatever
// FLASHSINKHORN_FP32_PASS_EXP says: the softmax's rows sum to 1 to float64 rounding), then the softmax
// kernel.
template <class Point>
cudaError_t launch_plan_softmax_as(const plan_rows_launch_args& args, cudaStream_t stream) {
  plan_rows_launch_args lse_only = args;
  lse_only.k = 0;
  lse_only.weighted = nullptr;
  lse_only.cost = nullptr;
  lse_only.values = nullptr;
  lse_only.directions = lse_only.key_directions = nullptr;
  if (const cudaError_t status = launch_plan_simt<Point>(lse_only, stream, false); status != cudaSuccess) return status;
  kernels::plan_rows_params<Point> p = simt_params<Point>(lse_only);
  p.weighted = args.weighted;
  using namespace kernels::plan_rows;
  const dim3 blocks(static_cast<unsigned>((p.rows + kRows - 1) / kRows), static_cast<unsigned>((p.keys + kKeys - 1) / kKeys));
  constexpr int kSharedBytes = kernels::plan_rows_shared_bytes(0);
  if (const cudaError_t status = allow_shared(kernels::plan_softmax_kernel<Point>, kSharedBytes); status != cudaSuccess)
    return status;
  kernels::plan_softmax_kernel<Point><<<blocks, kThreads, kSharedBytes, stream>>>(p);
  return cudaGetLastError();
}

template <kernels::value_format kFormat, bool kPermuted, class Source>
cudaError_t stage_values(const Source* values, std::int64_t stride, std::int64_t keys, std::int64_t keys_padded,
                         std::int64_t k, void* staged, cudaStream_t stream) {
  const std::int64_t columns = value_columns_padded(k);
  kernels::stage_values_kernel<kFormat, kPermuted><<<blocks_for(columns * keys_padded), kElementwiseThreads, 0, stream>>>(
      static_cast<float*>(staged), values, stride, keys, keys_padded, k, columns);
  return cudaGetLastError();
}

// The values in `layout`: Vᵀ tiles in the operand format of `mode`'s P·V product (tf32; fp32 for
// the 3×TF32 mode), permuted for the Hopper kernel, or the one fp32 row of the vector pass.
template <class Source>
cudaError_t stage_for(precision mode, staged_values_layout layout, const Source* values, std::int64_t stride,
                      std::int64_t keys, std::int64_t keys_padded, std::int64_t k, void* staged, cudaStream_t stream) {
  using kernels::value_format;
  switch (layout) {
    case staged_values_layout::none: return cudaSuccess;
    case staged_values_layout::vector:
      kernels::stage_values_kernel<value_format::fp32, false><<<blocks_for(keys_padded), kElementwiseThreads, 0, stream>>>(
          static_cast<float*>(staged), values, stride, keys, keys_padded, 1, 1);
      return cudaGetLastError();
    case staged_values_layout::permuted_tiles:
      return stage_values<value_format::tf32, true>(values, stride, keys, keys_padded, k, staged, stream);
    case staged_values_layout::tiles:
      if (mode == precision::fp32) return stage_values<value_format::fp32, false>(values, stride, keys, keys_padded, k, staged, stream);
      return stage_values<value_format::tf32, false>(values, stride, keys, keys_padded, k, staged, stream);
  }
  return cudaErrorInvalidValue;
}

// The key splits of the one-column pass (key_splits.hpp): as many CTAs of it as fit on an SM.
template <class Op>
split_plan plan_vector_splits(const device_cloud_view& rows, const device_cloud_view& keys, int sm_count) {
  using namespace kernels::plan_tile;
  const int ctas_per_sm = occupancy(kernels::plan_mma_kernel<Op, false, true>, kThreads, kSharedBytes);
  return plan_key_splits((rows.count + kBlockM - 1) / kBlockM, keys.padded_count / kBlockN,
                         static_cast<std::int64_t>(sm_count) * ctas_per_sm, tile::kMaxSplits, tile::kMinTilesPerSplit);
}

std::int64_t vector_partial_bytes(const device_cloud_view& rows, int splits) {
  return kernels::plan_vector_partial_bytes_of(rows.padded_count, splits);
}

// `vector`: the one-column FMA pass (staged_values_layout::vector), its keys split when few row
// blocks would leave SMs idle and the scratch holds the partial states; stored_directions: the
// quadratic pass.
template <class Op>
cudaError_t launch_plan_mma(const plan_rows_launch_args& args, bool vector, cudaStream_t stream) {
  using namespace kernels::plan_tile;
  const device_cloud_view& rows = args.rows;
  const device_cloud_view& keys = args.keys;
  kernels::plan_mma_params p{};
  p.rows_points = rows.points;
  p.key_points = keys.points;
  p.key_bias = args.bias_scratch;
  p.values_t = args.k > 0 ? args.values_scratch : nullptr;
  p.directions = args.stored_directions;
  p.key_directions = args.stored_key_directions;
  p.row_scaled_sq_norm = rows.scaled_sq_norm;
  p.key_scaled_sq_norm = keys.scaled_sq_norm;
  p.lse = args.lse;
  p.weighted = args.k > 0 ? args.weighted : nullptr;
  p.cost = args.cost;
  p.rows = rows.count;
  p.keys = keys.count;
  p.keys_padded = keys.padded_count;
  p.padded_words = rows.padded_dim * static_cast<std::int64_t>(sizeof(typename Op::storage)) / 4;
  p.k = args.k;
  p.score_scale_log2 = static_cast<float>(2.0 * args.cost_scale / args.eps * 1.44269504088896340736);
  p.cost_scale2 = static_cast<float>(2.0 * args.cost_scale);
  p.eps = args.eps;
  split_plan splits;
  if (vector) {
    splits = plan_vector_splits<Op>(rows, keys, args.sm_count);
    if (vector_partial_bytes(rows, splits.splits) > args.partial_scratch_capacity) splits = split_plan{};
  }
  if (splits.splits > 1) {
    p.partials = static_cast<kernels::plan_vector_partial*>(args.partial_scratch);
    p.rows_padded = rows.padded_count;
    p.tiles_per_split = splits.tiles_per_split;
  }
  const dim3 grid(static_cast<unsigned>((rows.count + kBlockM - 1) / kBlockM),
                  static_cast<unsigned>(vector ? splits.splits
                                               : (args.k > 0 ? value_columns_padded(args.k) / kValueCols : 1)));
  auto launch = [&](auto kernel, int shared_bytes) {
    cudaError_t s = allow_shared(kernel, shared_bytes);
    if (s != cudaSuccess) return s;
    kernel<<<grid, kThreads, shared_bytes, stream>>>(p);
    return cudaGetLastError();
  };
  if (args.stored_directions != nullptr) {
    const int shared_bytes = args.stored_key_directions != nullptr ? kKeyDirectionsSharedBytes : kQuadraticSharedBytes;
    if (args.k <= 0 || args.cost != nullptr || shared_bytes > args.max_shared_bytes) return cudaErrorInvalidValue;
    return launch(kernels::plan_mma_kernel<Op, false, false, true>, shared_bytes);
  }
  if (vector) {
    const cudaError_t status = launch(kernels::plan_mma_kernel<Op, false, true>, kSharedBytes);
    if (status != cudaSuccess || splits.splits <= 1) return status;
    kernels::plan_vector_combine_kernel<><<<blocks_for(rows.count), kElementwiseThreads, 0, stream>>>(p, splits.splits);
    return cudaGetLastError();
  }
  return args.cost != nullptr ? launch(kernels::plan_mma_kernel<Op, true>, kSharedBytes)
                              : launch(kernels::plan_mma_kernel<Op, false>, kSharedBytes);
}

// What both Hopper plan kernels take: the panel tensor maps of the rows, the keys (rows of `words`
// words) and the staged Vᵀ (64-row boxes), and the parameters; false when a map cannot be made.
// `half_panels`: the rows' and keys' boxes are half a block (64 rows), for the streamed kernel's
// cluster pairs, whose CTAs each load half of every panel.
struct hopper_plan {
  CUtensorMap rows_map, keys_map, values_map;
  kernels::plan_wgmma_params p{};
  std::int64_t columns = 0;  // staged value columns
};

bool make_hopper_plan(const plan_rows_launch_args& args, std::int64_t words, int stages, hopper_plan& out,
                      bool half_panels = false) {
  const device_cloud_view& rows = args.rows;
  const device_cloud_view& keys = args.keys;
  const int shares = half_panels ? 2 : 1;
  out.columns = value_columns_padded(args.k);
  if (!make_panel_tensor_map(&out.rows_map, rows.points, words, rows.padded_count, tile::kWgmmaBlockM / shares) ||
      !make_panel_tensor_map(&out.keys_map, keys.points, words, keys.padded_count, wgmma::kTileN / shares) ||
      !make_panel_tensor_map(&out.values_map, args.values_scratch, keys.padded_count, out.columns,
                             kernels::plan_wgmma::kValueCols))
    return false;
  kernels::plan_wgmma_params& p = out.p;
  p.key_bias = args.bias_scratch;
  p.row_scaled_sq_norm = rows.scaled_sq_norm;
  p.lse = args.lse;
  p.weighted = args.weighted;
  p.rows = rows.count;
  p.k = args.k;
  p.key_tiles = static_cast<int>(keys.padded_count / wgmma::kTileN);
  p.stages = stages;
  p.score_scale_log2 = static_cast<float>(2.0 * args.cost_scale / args.eps * 1.44269504088896340736);
  p.eps = args.eps;
  return true;
}

// Value tiles of `tile_columns` columns a row block, for k value columns.
std::int64_t value_tiles_of(std::int64_t k, std::int64_t tile_columns) {
  return (value_columns_padded(k) + tile_columns - 1) / tile_columns;
}

// A grid of row blocks × value tiles of `tile_columns` columns.
dim3 hopper_plan_grid(const hopper_plan& plan, std::int64_t tile_columns) {
  return dim3(static_cast<unsigned>((plan.p.rows + tile::kWgmmaBlockM - 1) / tile::kWgmmaBlockM),
              static_cast<unsigned>(value_tiles_of(plan.p.k, tile_columns)));
}

template <class Op, int kSteps>
cudaError_t launch_plan_wgmma_steps(const plan_rows_launch_args& args, const kernels::plan_wgmma_geometry& geo,
                                    cudaStream_t stream) {
  hopper_plan plan;
  if (!make_hopper_plan(args, kSteps * wgmma::kStepBytes / 4, geo.stages, plan)) return cudaErrorNotSupported;
  plan.p.stage_bytes = geo.stage_bytes;
  plan.p.query_bytes = geo.query_bytes;
  const auto kernel = &kernels::plan_wgmma_kernel<Op, kSteps>;
  cudaError_t status = allow_shared(kernel, geo.total_bytes);
  if (status != cudaSuccess) return status;
  kernel<<<hopper_plan_grid(plan, kernels::plan_wgmma::kValueCols), tile::kWgmmaWsThreads, geo.total_bytes, stream>>>(
      plan.p, plan.rows_map, plan.keys_map, plan.values_map);
  return cudaGetLastError();
}

// Wide rows: the streamed kernel, 128 value columns per CTA when the staged columns come in
// pairs of 64-column tiles; in cluster pairs (FLASHSINKHORN_PLAN_CLUSTER_PAIRS) where a row block
// has an even number of value tiles (and, to split the scores, at least two panels).
template <class Op, int kHalves, plan_pairing kPairing>
cudaError_t launch_plan_wgmma_streamed_as(const plan_rows_launch_args& args, std::int64_t words, std::int64_t value_tiles,
                                          cudaStream_t stream) {
  constexpr int kExtraBytes = kernels::plan_pairing_extra_bytes(kPairing);
  hopper_plan plan;
  const int stages = kernels::plan_wgmma_streamed_stages(args.max_shared_bytes - kExtraBytes);
  if (stages == 0 || !make_hopper_plan(args, words, stages, plan, kPairing == plan_pairing::multicast))
    return cudaErrorNotSupported;
  plan.p.value_tiles = static_cast<int>(value_tiles);
  const int shared_bytes = wgmma::kPanelAlignment + stages * kernels::plan_wgmma_streamed::kStageBytes + kExtraBytes;
  const int panels = static_cast<int>(words / wgmma::kPanelWords);
  const dim3 grid = hopper_plan_grid(plan, kHalves * kernels::plan_wgmma::kValueCols);
  const auto kernel = &kernels::plan_wgmma_streamed_kernel<Op, kHalves, kPairing>;
  cudaError_t status = allow_shared(kernel, shared_bytes);
  if (status != cudaSuccess) return status;
  if constexpr (kPairing != plan_pairing::none) {
    return launch_cluster_pairs(kernel, std::int64_t{grid.x} * grid.y, tile::kWgmmaWsThreads, shared_bytes, stream,
                                plan.p, panels, plan.rows_map, plan.keys_map, plan.values_map);
  } else {
    kernel<<<grid, tile::kWgmmaWsThreads, shared_bytes, stream>>>(plan.p, panels, plan.rows_map, plan.keys_map,
                                                                  plan.values_map);
    return cudaGetLastError();
  }
}

template <class Op, int kHalves>
cudaError_t launch_plan_wgmma_streamed(precision mode, const plan_rows_launch_args& args, std::int64_t words,
                                       cudaStream_t stream) {
  const std::int64_t value_tiles = value_tiles_of(args.k, kHalves * kernels::plan_wgmma::kValueCols);
  const int panels = static_cast<int>(words / wgmma::kPanelWords);
  const bool inbox_fits =
      kernels::plan_wgmma_streamed_stages(args.max_shared_bytes - kernels::plan_pairing_extra_bytes(plan_pairing::split_scores)) > 0;
  switch (plan_pairing_for(plan_cluster_pairs_choice(mode), value_tiles, panels, inbox_fits)) {
    case plan_pairing::multicast:
      return launch_plan_wgmma_streamed_as<Op, kHalves, plan_pairing::multicast>(args, words, value_tiles, stream);
    case plan_pairing::split_scores:
      return launch_plan_wgmma_streamed_as<Op, kHalves, plan_pairing::split_scores>(args, words, value_tiles, stream);
    case plan_pairing::none: break;
  }
  return launch_plan_wgmma_streamed_as<Op, kHalves, plan_pairing::none>(args, words, value_tiles, stream);
}

template <class Op>
cudaError_t launch_plan_wgmma(precision mode, const plan_rows_launch_args& args, cudaStream_t stream) {
  const int words = static_cast<int>(row_words(mode, args.rows.padded_dim));
  if (words / 8 > kernels::plan_wgmma::kMaxSteps) {
    const bool pairs = value_columns_padded(args.k) % (2 * kernels::plan_wgmma::kValueCols) == 0;
    return pairs ? launch_plan_wgmma_streamed<Op, 2>(mode, args, words, stream)
                 : launch_plan_wgmma_streamed<Op, 1>(mode, args, words, stream);
  }
  const kernels::plan_wgmma_geometry geo = kernels::make_plan_wgmma_geometry(words, args.max_shared_bytes);
  switch (words / 8) {
    case 2: return launch_plan_wgmma_steps<Op, 2>(args, geo, stream);
    case 4: return launch_plan_wgmma_steps<Op, 4>(args, geo, stream);
    case 6: return launch_plan_wgmma_steps<Op, 6>(args, geo, stream);
    case 8: return launch_plan_wgmma_steps<Op, 8>(args, geo, stream);
    default: return cudaErrorInvalidValue;
  }
}

// Whether a pass runs the Hopper kernels (staged_values_layout::permuted_tiles).
bool plan_uses_wgmma(precision mode, std::int64_t padded_dim, std::int64_t k, bool want_cost, int max_shared_bytes) {
  if ((mode != precision::tf32 && mode != precision::bf16) || k <= 1 || want_cost) return false;
  if (!wgmma_available(mode)) return false;
  const std::int64_t words = row_words(mode, padded_dim);
  if (words / 8 > kernels::plan_wgmma::kMaxSteps)  // wide rows: the streamed kernel, whole panels
    return words % wgmma::kPanelWords == 0 && kernels::plan_wgmma_streamed_stages(max_shared_bytes) > 0;
  return words % 16 == 0 && kernels::make_plan_wgmma_geometry(static_cast<int>(words), max_shared_bytes).fits;
}

}  // namespace

staged_values_layout plan_values_layout(precision mode, std::int64_t padded_dim, std::int64_t k, bool want_cost,
                                        int max_shared_bytes, bool quadratic) {
  if (k <= 0 || mode == precision::fp64) return staged_values_layout::none;
  if (quadratic) return staged_values_layout::tiles;
  if (k == 1 && !want_cost) return staged_values_layout::vector;
  return plan_uses_wgmma(mode, padded_dim, k, want_cost, max_shared_bytes) ? staged_values_layout::permuted_tiles
                                                                          : staged_values_layout::tiles;
}

std::int64_t plan_values_bytes(staged_values_layout layout, std::int64_t k, std::int64_t keys_padded) {
  switch (layout) {
    case staged_values_layout::none: return 0;
    case staged_values_layout::vector: return keys_padded * static_cast<std::int64_t>(sizeof(float));
    case staged_values_layout::tiles:
    case staged_values_layout::permuted_tiles:
      return value_columns_padded(k) * keys_padded * static_cast<std::int64_t>(sizeof(float));
  }
  return 0;
}

std::int64_t plan_vector_partial_bytes(precision mode, const device_cloud_view& rows, const device_cloud_view& keys,
                                       int sm_count, int max_shared_bytes) {
  // Enough for whichever of the two one-column passes runs (the Hopper one where it applies).
  const std::int64_t hopper = plan_vector_wgmma_partial_bytes(mode, rows, keys, sm_count, max_shared_bytes);
  switch (mode) {
    case precision::fp32:
      return std::max(plan_vector_narrow_partial_bytes(rows, keys, sm_count),
                      vector_partial_bytes(rows, plan_vector_splits<kernels::fp32_split_operands>(rows, keys, sm_count).splits));
    case precision::tf32:
      return std::max(hopper, vector_partial_bytes(rows, plan_vector_splits<kernels::tf32_operands>(rows, keys, sm_count).splits));
    case precision::bf16:
      return std::max(hopper, vector_partial_bytes(rows, plan_vector_splits<kernels::bf16_operands>(rows, keys, sm_count).splits));
    case precision::fp64: return plan_simt_partial_bytes(mode, rows, keys, 1, sm_count);
  }
  return 0;
}

std::int64_t plan_simt_partial_bytes(precision mode, const device_cloud_view& rows, const device_cloud_view& keys,
                                     std::int64_t k, int sm_count) {
  const auto bytes = [&](bool quadratic) {
    const split_plan splits = mode == precision::fp64 ? plan_simt_splits<double>(rows, keys, k, quadratic, sm_count)
                                                      : plan_simt_splits<float>(rows, keys, k, quadratic, sm_count);
    return simt_partial_bytes(rows.count, k, splits.splits);
  };
  return std::max(bytes(false), bytes(true));  // enough for either instance
}

cudaError_t stage_plan_values(precision mode, staged_values_layout layout, const float* values, std::int64_t stride,
                              std::int64_t keys, std::int64_t keys_padded, std::int64_t k, void* staged,
                              cudaStream_t stream) {
  return stage_for(mode, layout, values, stride, keys, keys_padded, k, staged, stream);
}

bool plan_pass_is_float64(precision mode, std::int64_t padded_dim) {
  return mode == precision::fp64 || (mode == precision::fp32 && fp32_fma_dots_for(padded_dim));
}

bool plan_softmax_applies(precision mode) { return mode == precision::fp64 || mode == precision::fp32; }

cudaError_t launch_plan_softmax(precision mode, const plan_rows_launch_args& args, cudaStream_t stream) {
  if (!plan_softmax_applies(mode) || args.lse == nullptr || args.weighted == nullptr ||
      args.rows.padded_dim != args.keys.padded_dim)
    return cudaErrorInvalidValue;
  if (args.rows.count <= 0 || args.keys.count <= 0) return cudaSuccess;
  if (plan_gemm_pass_enabled(mode, args.rows.padded_dim)) {
    enqueue_plan_gemm_softmax(args, stream);
    return cudaSuccess;
  }
  return mode == precision::fp64 ? launch_plan_softmax_as<double>(args, stream) : launch_plan_softmax_as<float>(args, stream);
}

cudaError_t launch_plan_rows(precision mode, const plan_rows_launch_args& args, cudaStream_t stream) {
  if (args.rows.count <= 0) return cudaSuccess;
  if (args.rows.padded_dim != args.keys.padded_dim) return cudaErrorInvalidValue;
  if (args.values_are_key_points) {  // a point gradient's pass: fp32 narrow rows, or the staged values below
    cudaError_t status = cudaSuccess;
    if (launch_plan_points_narrow(mode, args, stream, status)) return status;
    if (!args.values_staged) return cudaErrorInvalidValue;
  }
  if (plan_pass_is_float64(mode, args.rows.padded_dim) && !args.values_staged) {
    if (args.stored_directions != nullptr || args.stored_key_directions != nullptr) return cudaErrorInvalidValue;
    if (plan_gemm_pass_applies(mode, args)) {
      enqueue_plan_gemm_rows(args, stream);
      return cudaSuccess;
    }
    cudaError_t status = cudaSuccess;
    if (launch_plan_vector_narrow(mode, args, stream, status)) return status;
    return mode == precision::fp64 ? launch_plan_simt<double>(args, stream) : launch_plan_simt<float>(args, stream);
  }
  // float64 directions are the fp64 pass's; stored key directions need stored directions.
  if (args.directions != nullptr || args.key_directions != nullptr) return cudaErrorInvalidValue;
  if (args.stored_key_directions != nullptr && args.stored_directions == nullptr) return cudaErrorInvalidValue;

  const device_cloud_view& keys = args.keys;
  kernels::key_bias_kernel<float><<<blocks_for(keys.padded_count), kElementwiseThreads, 0, stream>>>(
      args.bias_scratch, args.key_potential, keys.log_weights, keys.scaled_sq_norm, keys.count, keys.padded_count,
      args.eps);
  cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess) return status;
  // One decision for the staging and the kernel.
  const staged_values_layout layout = plan_values_layout(mode, args.rows.padded_dim, args.k, args.cost != nullptr,
                                                         args.max_shared_bytes, args.stored_directions != nullptr);
  const bool hopper = layout == staged_values_layout::permuted_tiles;
  const bool vector = layout == staged_values_layout::vector;
  if (args.k > 0 && !args.values_staged) {
    status = stage_for(mode, layout, args.values, args.values_stride > 0 ? args.values_stride : args.k, keys.count,
                       keys.padded_count, args.k, args.values_scratch, stream);
    if (status != cudaSuccess) return status;
  }
  const bool lse_only = args.k == 0 && args.cost == nullptr && args.stored_directions == nullptr;
  if ((vector || lse_only) && launch_plan_vector_wgmma(mode, args, stream, status)) return status;
  switch (mode) {
    case precision::fp32: return launch_plan_mma<kernels::fp32_split_operands>(args, vector, stream);
    case precision::tf32:
      return hopper ? launch_plan_wgmma<kernels::wgmma_tf32_operands>(mode, args, stream)
                    : launch_plan_mma<kernels::tf32_operands>(args, vector, stream);
    case precision::bf16:
      return hopper ? launch_plan_wgmma<kernels::wgmma_bf16_operands>(mode, args, stream)
                    : launch_plan_mma<kernels::bf16_operands>(args, vector, stream);
    case precision::fp64: break;
  }
  return cudaErrorInvalidValue;
}

}  // namespace flashsinkhorn::detail
