// Host launch of one softmin half-step (see softmin_launch.hpp): β, then the fused kernel (which
// also merges the splits when the key range is split across CTAs).
#include "cuda/softmin_launch.hpp"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "cuda/cluster_launch.hpp"
#include "cuda/kernel_occupancy.hpp"
#include "cuda/kernel_variant.hpp"
#include "cuda/key_splits.hpp"
#include "cuda/narrow_dims.hpp"
#include "cuda/predicted_reference_rule.hpp"
#include "cuda/softmin_kernel.cuh"
#include "cuda/softmin_narrow_kernel.cuh"
#include "cuda/softmin_simt_kernel.cuh"
#include "cuda/softmin_wgmma_kernel.cuh"
#include "cuda/softmin_wgmma_streamed_kernel.cuh"
#include "cuda/softmin_wgmma_tma_kernel.cuh"
#include "cuda/softmin_wgmma_ws_kernel.cuh"
#include "cuda/softmin_wgmma_ws_streamed_kernel.cuh"
#include "cuda/tensor_map.hpp"
#include "cuda/tile_config.hpp"

namespace flashsinkhorn::detail {
namespace {

enum class kernel_family { fma, mma_sync, wgmma, wgmma_streamed };

struct kernel_shape {
  kernel_family family = kernel_family::fma;
  int threads = 0;       // per CTA
  int block_m = 0;       // rows per CTA
  int block_n = 0;       // keys per tile
  int shared_bytes = 0;  // dynamic shared memory per CTA
  int ctas_per_sm = 1;   // occupancy, for the split plan
  int steps = 0;         // wgmma: 32-byte k-steps per row (selects the kernel instance)
  std::int64_t streamed_query_bytes = 0;  // streamed wgmma: the query block each key tile reads again
};

template <class Op>
kernel_shape mma_shape(std::int64_t padded_dim, int max_shared_bytes) {
  const std::int64_t words = padded_dim * static_cast<std::int64_t>(sizeof(typename Op::storage)) / 4;
  const kernels::mma_geometry geo = kernels::choose_mma_geometry(words, max_shared_bytes);
  kernel_shape shape;
  shape.family = kernel_family::mma_sync;
  shape.threads = tile::kThreads;
  shape.block_m = tile::kBlockM;
  shape.block_n = tile::kBlockN;
  shape.shared_bytes = geo.total_bytes;
  shape.ctas_per_sm = occupancy(kernels::softmin_mma_kernel<Op>, tile::kThreads, shape.shared_bytes);
  return shape;
}

// The kernel variant of a precision (kernel_variant.hpp) and what it implies: the warp-specialised
// resident kernel (one CTA per SM) and, for wide rows, the warp-specialised streamed kernel under
// every variant but cpasync.
bool ws_resident(precision mode) { return selected_wgmma_variant(mode) == wgmma_variant::ws; }
bool ws_streamed(precision mode) { return selected_wgmma_variant(mode) != wgmma_variant::cpasync; }

}  // namespace

bool wgmma_available(precision mode) {
#if defined(FLASHSINKHORN_HAS_SM90A)
  if (selected_wgmma_variant(mode) == wgmma_variant::mma_sync) return false;
  thread_local int cached_device = -1;
  thread_local bool cached_answer = false;
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return false;
  if (device != cached_device) {
    int major = 0, minor = 0;
    const bool ok = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) == cudaSuccess &&
                    cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) == cudaSuccess;
    cached_answer = ok && major == 9 && minor == 0;
    cached_device = device;
  }
  return cached_answer;
#else
  return false;
#endif
}

namespace {

// Calls make(std::integral_constant<int, steps>) for a row of `steps` 32-byte k-steps (rows are
// padded to 16 words, so steps is even and ≤ kWgmmaMaxRowWords / 8): the kernel instances.
template <class Make>
auto for_steps(int steps, Make make) -> decltype(make(std::integral_constant<int, 2>{})) {
  static_assert(tile::kWgmmaMaxRowWords / 8 <= 12, "extend the table below");
  switch (steps) {
    case 2: return make(std::integral_constant<int, 2>{});
    case 4: return make(std::integral_constant<int, 4>{});
    case 6: return make(std::integral_constant<int, 6>{});
    case 8: return make(std::integral_constant<int, 8>{});
    case 10: return make(std::integral_constant<int, 10>{});
    case 12: return make(std::integral_constant<int, 12>{});
    default: return nullptr;
  }
}

template <class Op>
auto wgmma_kernel_for(int steps) {
  return for_steps(steps, [](auto k) { return &kernels::softmin_wgmma_kernel<Op, decltype(k)::value>; });
}

// The copy-engine variants of the same instance.
template <class Op>
auto wgmma_tma_kernel_for(int steps) {
  return for_steps(steps, [](auto k) { return &kernels::softmin_wgmma_tma_kernel<Op, decltype(k)::value>; });
}

// `split_exp2` (predicted references only; kernel_variant.hpp, exp2_split_choice): the instance that takes a
// quarter of the exponentials on the FMA pipe, built for rows of at most kExp2SplitMaxSteps k-steps.
template <class Op>
auto wgmma_ws_kernel_for(int steps, bool predicted_reference = false, bool split_exp2 = false) {
  if (!predicted_reference)
    return for_steps(steps, [](auto k) { return &kernels::softmin_wgmma_ws_kernel<Op, decltype(k)::value>; });
  if (!split_exp2)
    return for_steps(steps, [](auto k) { return &kernels::softmin_wgmma_ws_kernel<Op, decltype(k)::value, true>; });
  return for_steps(steps, [](auto k) {
    constexpr int kSteps = decltype(k)::value;
    return &kernels::softmin_wgmma_ws_kernel<Op, kSteps, true, kSteps <= kExp2SplitMaxSteps>;
  });
}

// The precision mode of a wgmma operand type.
template <class Op>
constexpr precision mode_of() {
  return std::is_same_v<Op, kernels::wgmma_bf16_operands> ? precision::bf16 : precision::tf32;
}

// Launches a copy-engine kernel of `family` (resident: tma or ws; streamed: the warp-specialised
// one, in clusters of two sharing panels where `key_pairs`: pair_cta_work_of) on rows of
// `row_words` words; false when the tensor maps cannot be made (the caller then
// launches the cp.async kernel).
// `predicted_reference`: the resident warp-specialised kernel's rows take references predicted from
// their previous potentials (wgmma_predicted_reference_for); the other copy-engine kernels keep the
// online maximum.
template <class Op>
bool launch_copy_engine(kernel_family family, const softmin_launch_args& args, const kernels::softmin_params& p,
                      const dim3& grid, std::int64_t row_words, int shared_bytes, bool predicted_reference,
                      bool key_pairs, cudaStream_t stream, cudaError_t& status) {
  const bool streamed = family == kernel_family::wgmma_streamed;
  CUtensorMap rows_map, keys_map;
  // In pairs each key panel is loaded in halves (64-row boxes); a query panel is always one box
  // (softmin_wgmma_ws_streamed_kernel.cuh).
  const int key_shares = key_pairs ? 2 : 1;
  if (!make_panel_tensor_map(&rows_map, args.rows.points, row_words, args.rows.padded_count, tile::kWgmmaBlockM) ||
      !make_panel_tensor_map(&keys_map, args.keys.points, row_words, args.keys.padded_count,
                             wgmma::kTileN / key_shares))
    return false;
  const bool ws = streamed || ws_resident(mode_of<Op>());
  const int steps = static_cast<int>(row_words * 4 / wgmma::kStepBytes);
  const auto kernel = key_pairs ? &kernels::softmin_wgmma_ws_streamed_kernel<Op, true>
                      : streamed ? &kernels::softmin_wgmma_ws_streamed_kernel<Op>
                      : ws       ? wgmma_ws_kernel_for<Op>(steps, predicted_reference, exp2_split_choice())
                                 : wgmma_tma_kernel_for<Op>(steps);
  status = allow_shared(kernel, shared_bytes);
  if (status != cudaSuccess) return true;
  if (key_pairs) {  // clusters of two CTAs sharing panels (key_pair_layout, pair_cta_work_of)
    status = launch_cluster_pairs(kernel, 2 * kernels::key_pair_layout_of(p).clusters(), tile::kWgmmaWsThreads,
                                  shared_bytes, stream, p, rows_map, keys_map);
    return true;
  }
  kernel<<<grid, ws ? tile::kWgmmaWsThreads : tile::kWgmmaThreads, shared_bytes, stream>>>(p, rows_map, keys_map);
  status = cudaGetLastError();
  return true;
}

// The Hopper kernel a row width gets, whatever the device (shape_for launches it, softmin_wgmma_plan
// reports it): the resident kernel up to kWgmmaMaxRowWords words, the streamed one beyond; none
// when its ring does not fit (family fma then).
struct wgmma_choice {
  kernel_family family = kernel_family::fma;
  int steps = 0;  // resident kernel: 32-byte k-steps per row (its instance)
  int stages = 0;
  int shared_bytes = 0;
  std::int64_t row_words = 0;
};

// 32-bit words per stored row: a tf32 value or two bf16 values per word.
std::int64_t row_words_of(precision mode, std::int64_t padded_dim) {
  return mode == precision::bf16 ? padded_dim / 2 : padded_dim;
}

wgmma_choice choose_wgmma(precision mode, std::int64_t padded_dim, int max_shared_bytes) {
  const std::int64_t row_words = row_words_of(mode, padded_dim);
  wgmma_choice choice;
  if (row_words <= tile::kWgmmaMaxRowWords) {
    const kernels::wgmma_geometry geo =
        kernels::make_wgmma_geometry(row_words, max_shared_bytes, ws_resident(mode) ? 1 : tile::kWgmmaCtasPerSm);
    if (geo.fits && geo.steps % 2 == 0) choice = {kernel_family::wgmma, geo.steps, geo.stages, geo.total_bytes, row_words};
    return choice;
  }
  if (ws_streamed(mode)) {
    const kernels::wgmma_ws_streamed_geometry geo = kernels::make_wgmma_ws_streamed_geometry(row_words, max_shared_bytes);
    if (geo.fits) choice = {kernel_family::wgmma_streamed, 0, geo.stages, geo.total_bytes, row_words};
    return choice;
  }
  const kernels::wgmma_streamed_geometry geo = kernels::make_wgmma_streamed_geometry(row_words, max_shared_bytes);
  if (geo.fits) choice = {kernel_family::wgmma_streamed, 0, geo.stages, geo.total_bytes, row_words};
  return choice;
}

template <class Op>
kernel_shape wgmma_shape(const wgmma_choice& choice) {
  kernel_shape shape;
  shape.family = choice.family;
  shape.block_m = tile::kWgmmaBlockM;
  shape.block_n = wgmma::kTileN;
  shape.shared_bytes = choice.shared_bytes;
  shape.steps = choice.steps;
  const bool resident = choice.family == kernel_family::wgmma;
  if (!resident) shape.streamed_query_bytes = std::int64_t{tile::kWgmmaBlockM} * choice.row_words * 4;
  if (resident ? ws_resident(mode_of<Op>()) : ws_streamed(mode_of<Op>())) {
    shape.threads = tile::kWgmmaWsThreads;
    shape.ctas_per_sm =
        occupancy(resident ? wgmma_ws_kernel_for<Op>(choice.steps) : &kernels::softmin_wgmma_ws_streamed_kernel<Op>,
                  shape.threads, shape.shared_bytes);
  } else {
    shape.threads = tile::kWgmmaThreads;
    shape.ctas_per_sm =
        occupancy(resident ? wgmma_kernel_for<Op>(choice.steps) : &kernels::softmin_wgmma_streamed_kernel<Op>,
                  shape.threads, shape.shared_bytes);
  }
  return shape;
}

// The fp64 SIMT kernel (softmin_simt_kernel.cuh).
kernel_shape simt_shape() {
  kernel_shape shape;
  shape.family = kernel_family::fma;
  shape.threads = tile::kBlockM64;
  shape.block_m = tile::kBlockM64;
  shape.block_n = tile::kBlockN64;
  shape.ctas_per_sm = occupancy(kernels::softmin_simt_kernel, tile::kBlockM64, 0);
  return shape;
}

// The fp32 kernel on narrow rows (softmin_narrow_kernel.cuh), the instance for `dim` coordinates.
auto narrow_kernel_for(std::int64_t dim) {
  return for_narrow_dim(dim, [](auto d) { return &kernels::softmin_narrow_kernel<decltype(d)::value>; });
}

// The same with references predicted from the previous potentials (kernel_variant.hpp,
// narrow_reference_choice): launched when the step has them.
auto narrow_predicted_kernel_for(std::int64_t dim) {
  return for_narrow_dim(dim, [](auto d) { return &kernels::softmin_narrow_kernel<decltype(d)::value, true>; });
}

// The process's FLASHSINKHORN_NARROW_REFERENCE applied to one kernel: forced either way, or under
// auto where that kernel's rule says it `pays`.
bool predicts(bool pays) {
  switch (narrow_reference_choice()) {
    case narrow_reference::online: return false;
    case narrow_reference::predicted: return true;
    case narrow_reference::automatic: return pays;
  }
  return false;
}

bool predicted_reference_for(std::int64_t dim, const split_plan& plan) {
  return predicts(narrow_prediction_pays(dim, plan));
}

// The warp-specialised wgmma kernel's references (FLASHSINKHORN_NARROW_REFERENCE names the choice
// for every kernel that can predict; auto: wgmma_prediction_pays).
bool wgmma_predicted_reference_for(std::int64_t dim, const split_plan& plan) {
  return predicts(wgmma_prediction_pays(dim, plan));
}

kernel_shape narrow_shape(std::int64_t dim) {
  kernel_shape shape;
  shape.family = kernel_family::fma;
  shape.threads = kernels::narrow::kThreads;
  shape.block_m = kernels::narrow::block_rows<float>;
  shape.block_n = kernels::narrow::kTileKeys;
  shape.ctas_per_sm = occupancy(narrow_kernel_for(dim), shape.threads, 0);
  return shape;
}

// `dim`: the rows' coordinates (the narrow kernel's instance; padded_dim where not known).
kernel_shape shape_for(precision mode, std::int64_t padded_dim, int max_shared_bytes, std::int64_t dim) {
  if ((mode == precision::tf32 || mode == precision::bf16) && wgmma_available(mode)) {
    const wgmma_choice choice = choose_wgmma(mode, padded_dim, max_shared_bytes);
    if (choice.family != kernel_family::fma)
      return mode == precision::bf16 ? wgmma_shape<kernels::wgmma_bf16_operands>(choice)
                                     : wgmma_shape<kernels::wgmma_tf32_operands>(choice);
  }
  switch (mode) {
    case precision::bf16: return mma_shape<kernels::bf16_operands>(padded_dim, max_shared_bytes);
    case precision::fp32:
      if (fp32_fma_dots_for(padded_dim)) return narrow_shape(dim);
      return mma_shape<kernels::fp32_split_operands>(padded_dim, max_shared_bytes);
    case precision::tf32: return mma_shape<kernels::tf32_operands>(padded_dim, max_shared_bytes);
    case precision::fp64: break;
  }
  return simt_shape();
}

// Whether a softmin of `rows` rows launched with this shape runs the streamed kernel in key pairs:
// the switch FLASHSINKHORN_STREAMED_KEY_PAIRS (kernel_variant.hpp), by default key_splits.hpp's rule.
bool key_pairs_for(precision mode, const kernel_shape& shape, std::int64_t rows, int sm_count) {
  if (shape.family != kernel_family::wgmma_streamed || !ws_streamed(mode)) return false;
  switch (streamed_key_pairs_choice()) {
    case key_pairs_mode::on: return true;
    case key_pairs_mode::off: return false;
    case key_pairs_mode::automatic: break;
  }
  const std::int64_t row_blocks = (rows + shape.block_m - 1) / shape.block_m;
  return streamed_key_pairs_pay(row_blocks, static_cast<std::int64_t>(std::max(1, sm_count)) * shape.ctas_per_sm);
}

// The key splits of a softmin launch (key_splits.hpp) for this kernel's shape; a streamed kernel's
// at least as many as keep its resident query blocks in L2 (streamed_query_splits). In key pairs
// without query pairs (key_pair_layout) an odd row-block count adds a ghost CTA a split, so the
// waves are counted over one more row block: 79 row blocks at 5 splits are 400 CTAs then, 4 more
// than three waves of 132. (With query pairs a ghost adds at most one CTA, two where an even split
// count ends with a short split.)
split_plan plan_splits(const kernel_shape& shape, std::int64_t rows, std::int64_t keys, int sm_count,
                       bool ghost_row_block) {
  const std::int64_t row_blocks = (rows + shape.block_m - 1) / shape.block_m;
  const std::int64_t launched_row_blocks = ghost_row_block ? row_blocks + row_blocks % 2 : row_blocks;
  const std::int64_t slots = static_cast<std::int64_t>(std::max(1, sm_count)) * shape.ctas_per_sm;
  const int least = streamed_query_splits(row_blocks, slots, shape.streamed_query_bytes, streamed_l2_budget_choice());
  split_plan plan = plan_key_splits(launched_row_blocks, (keys + shape.block_n - 1) / shape.block_n, slots,
                                    tile::kMaxSplits, tile::kMinTilesPerSplit, least);
  plan.row_blocks = static_cast<int>(std::max<std::int64_t>(1, row_blocks));
  return plan;
}

// Whether a key-pairs launch of this shape plans a ghost CTA per split for an odd row-block count.
bool ghost_row_block_for(precision mode, const kernel_shape& shape, std::int64_t rows, int sm_count) {
  return !streamed_query_pairs_choice() && key_pairs_for(mode, shape, rows, sm_count);
}

// tf32 on rows of at most 2 coordinates runs the fp32 narrow kernel wherever that kernel would take
// predicted references (predicted_reference_for on its own key splits): FMA dots on the stored
// tf32-rounded points — the mode's inputs; a product of two tf32 values is exact in fp32, as on the
// tensor core — with d + 3 instructions a score; the MUFU bounds it and the wgmma kernel alike.
// Measured on the H200 against the wgmma kernel with its online maximum (2026-12-05,
// bench/results/narrow_reference_ab_tf32_h200_2026-12-05_s32.json, tf32, ms an iteration, narrow /
// wgmma-ws): d = 1, n = 10⁵ 5.65 / 9.83; d = 3: 2·10⁴ 0.395 / 0.451, 5·10⁴ 2.12 / 2.48, 2·10⁵
// 29.7 / 39.0; d = 4, 5·10⁴ 2.82 / 2.48. Since session 35 the wgmma kernel predicts too
// (wgmma_predicted_reference_for), and its instance for rows padded to 16 words — the same for
// d = 1 … 16 — took 0.353 / 1.70 / 26.2 ms at 2·10⁴ / 5·10⁴ / 2·10⁵ on the H100 at d = 8 and 1.69 at
// 5·10⁴, d = 16 (wgmma_reference_ab_h100_2026-12-05_s35.json): under the narrow kernel's d = 3 figures
// (0.398 / 2.12 / 29.7 on the H100 too, narrow_reference_ab_h100_2026-12-05_s32.json), level with its
// d = 2 (10⁵: 6.99 against ~6.8 for the wgmma kernel's 4 × 1.70) and above its d = 1 (5.66). So d = 3
// moved to wgmma, and the H100 confirmed it at d = 3 (session 37, 94d311b,
// narrow_reference_ab_h100_2026-12-05_s37.json, n = 5·10⁴): tf32 on wgmma 1.70 ms an iteration
// against 2.10–2.20 for the narrow kernel with predicted references (its fp32 rows, the same work).
constexpr std::int64_t kTf32NarrowMaxDim = 2;

bool tf32_runs_narrow(precision mode, std::int64_t dim, std::int64_t rows, std::int64_t keys, int sm_count) {
  if (mode != precision::tf32 || dim > kTf32NarrowMaxDim) return false;
  return predicted_reference_for(dim, plan_splits(narrow_shape(dim), rows, keys, sm_count, false));
}

// The kernel a softmin of `rows` rows over `keys` keys launches (`dim`: the rows' coordinates).
kernel_shape launch_shape(precision mode, std::int64_t padded_dim, std::int64_t dim, std::int64_t rows,
                          std::int64_t keys, int sm_count, int max_shared_bytes) {
  if (tf32_runs_narrow(mode, dim, rows, keys, sm_count)) return narrow_shape(dim);
  return shape_for(mode, padded_dim, max_shared_bytes, dim);
}

// The key splits of the kernel a softmin of `rows` rows (padded to `padded_dim`) over `keys` keys launches.
int key_splits_of(precision mode, std::int64_t padded_dim, std::int64_t dim, std::int64_t rows, std::int64_t keys,
                  int sm_count, int max_shared_bytes) {
  const kernel_shape shape = launch_shape(mode, padded_dim, dim, rows, keys, sm_count, max_shared_bytes);
  return plan_splits(shape, rows, keys, sm_count, ghost_row_block_for(mode, shape, rows, sm_count)).splits;
}

}  // namespace

int softmin_split_count(precision mode, const device_cloud_view& rows, const device_cloud_view& keys,
                        int sm_count, int max_shared_bytes) {
  return key_splits_of(mode, rows.padded_dim, rows.dim, rows.count, keys.count, sm_count, max_shared_bytes);
}

std::int64_t softmin_padded_dim(precision mode, std::int64_t dim) {
  // Rows wider than the resident wgmma kernel's limit are padded to whole 32-word panels for the
  // streamed wgmma kernel (a multiple of 16 words, so the mma.sync kernel reads them as well).
  const std::int64_t values_per_word = mode == precision::bf16 ? 2 : 1;
  const std::int64_t words = (dim + values_per_word - 1) / values_per_word;
  const std::int64_t multiple = words <= tile::kWgmmaMaxRowWords ? tile::kRowWordMultiple : wgmma::kPanelWords;
  switch (mode) {
    case precision::fp64: return dim;
    case precision::bf16:
    case precision::tf32: return values_per_word * tile::round_up(words, multiple);
    case precision::fp32: return tile::round_up(dim, tile::kRowWordMultiple);
  }
  return dim;
}

// The name of the wgmma kernel the chosen variant launches for `family` (wgmma or wgmma_streamed).
const char* wgmma_kernel_name(precision mode, kernel_family family) {
  if (family == kernel_family::wgmma_streamed) return ws_streamed(mode) ? "wgmma-ws-streamed" : "wgmma-streamed";
  switch (selected_wgmma_variant(mode)) {
    case wgmma_variant::ws: return "wgmma-ws";
    case wgmma_variant::tma: return "wgmma-tma";
    default: return "wgmma";
  }
}

const char* softmin_kernel_name(precision mode, std::int64_t dim, std::int64_t rows, std::int64_t keys, int sm_count,
                                int max_shared_bytes) {
  const std::int64_t padded_dim = softmin_padded_dim(mode, dim);
  switch (const kernel_family family =
              launch_shape(mode, padded_dim, dim, rows, keys, sm_count, max_shared_bytes).family) {
    case kernel_family::wgmma:
    case kernel_family::wgmma_streamed: return wgmma_kernel_name(mode, family);
    case kernel_family::mma_sync: return "mma.sync";
    case kernel_family::fma: return "fma";
  }
  return "fma";
}

int softmin_key_splits(precision mode, std::int64_t dim, std::int64_t rows, std::int64_t keys, int sm_count,
                       int max_shared_bytes) {
  return key_splits_of(mode, softmin_padded_dim(mode, dim), dim, rows, keys, sm_count, max_shared_bytes);
}

bool softmin_key_pairs(precision mode, std::int64_t dim, std::int64_t rows, std::int64_t keys, int sm_count,
                       int max_shared_bytes) {
  const std::int64_t padded_dim = softmin_padded_dim(mode, dim);
  const kernel_shape shape = launch_shape(mode, padded_dim, dim, rows, keys, sm_count, max_shared_bytes);
  return key_pairs_for(mode, shape, rows, sm_count);
}

wgmma_plan softmin_wgmma_plan(precision mode, std::int64_t padded_dim, int max_shared_bytes) {
  if (mode != precision::tf32 && mode != precision::bf16) return {};
  const wgmma_choice choice = choose_wgmma(mode, padded_dim, max_shared_bytes);
  if (choice.family == kernel_family::fma) return {};
  return {wgmma_kernel_name(mode, choice.family), choice.stages, choice.shared_bytes};
}

std::int64_t softmin_split_counts(std::int64_t padded_rows) {
  // One count per row block; every kernel's CTA holds at least kMinBlockRows rows.
  constexpr std::int64_t kMinBlockRows = 16;
  return (padded_rows + kMinBlockRows - 1) / kMinBlockRows;
}

std::int64_t softmin_partial_bytes(precision mode, std::int64_t padded_rows, int splits) {
  if (splits <= 1) return 0;
  const std::int64_t state_bytes = mode == precision::fp64 ? 16 : 8;
  return state_bytes * padded_rows * splits;
}

cudaError_t launch_softmin(precision mode, const softmin_launch_args& args, cudaStream_t stream) {
  const device_cloud_view& rows = args.rows;
  const device_cloud_view& keys = args.keys;
  if (rows.count <= 0 || keys.count <= 0) return cudaErrorInvalidValue;
  if (rows.padded_dim != keys.padded_dim) return cudaErrorInvalidValue;
  const kernel_shape shape =
      launch_shape(mode, rows.padded_dim, rows.dim, rows.count, keys.count, args.sm_count, args.max_shared_bytes);
  if (shape.shared_bytes > args.max_shared_bytes) return cudaErrorInvalidConfiguration;
  const bool ghost_row_block = ghost_row_block_for(mode, shape, rows.count, args.sm_count);
  const split_plan plan = plan_splits(shape, rows.count, keys.count, args.sm_count, ghost_row_block);
  if (softmin_partial_bytes(mode, rows.padded_count, plan.splits) > args.partial_scratch_capacity)
    return cudaErrorInvalidValue;
  if (plan.splits > 1 && (args.split_counts == nullptr || plan.row_blocks > args.split_count_capacity))
    return cudaErrorInvalidValue;

  kernels::softmin_params p{};
  p.rows_points = rows.points;
  p.key_points = keys.points;
  p.key_bias = args.bias_scratch;
  p.row_scaled_sq_norm = rows.scaled_sq_norm;
  p.row_weights = rows.weights;
  p.previous = args.previous;
  p.reference_margin_log2 = narrow_margin_choice();
  p.out = args.out;
  p.error = args.error;
  p.partial = args.partial_scratch;
  p.split_counts = args.split_counts;
  p.rows = rows.count;
  p.rows_padded = rows.padded_count;
  p.padded_dim = rows.padded_dim;
  p.dim = rows.dim;
  p.key_tiles = plan.key_tiles;
  p.tiles_per_split = plan.tiles_per_split;
  p.splits = plan.splits;
  p.score_scale = 2.0 * args.cost_scale / args.eps;
  p.score_scale_log2 = static_cast<float>(p.score_scale * 1.44269504088896340736);
  p.eps = args.eps;
  p.damping = args.damping;
  p.blend = args.blend;
  p.accumulate_error = args.accumulate_error ? 1 : 0;
  p.max_shared_bytes = args.max_shared_bytes;
  p.query_pairs = streamed_query_pairs_choice() ? 1 : 0;

  // 1. β_j
  constexpr int kBiasThreads = 256;
  const auto bias_blocks = static_cast<unsigned>((keys.padded_count + kBiasThreads - 1) / kBiasThreads);
  if (mode == precision::fp64) {
    kernels::key_bias_kernel<double><<<bias_blocks, kBiasThreads, 0, stream>>>(
        static_cast<double*>(args.bias_scratch), args.key_potential, keys.log_weights,
        keys.scaled_sq_norm, keys.count, keys.padded_count, args.eps);
  } else {
    kernels::key_bias_kernel<float><<<bias_blocks, kBiasThreads, 0, stream>>>(
        static_cast<float*>(args.bias_scratch), args.key_potential, keys.log_weights,
        keys.scaled_sq_norm, keys.count, keys.padded_count, args.eps);
  }
  cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess) return status;

  // 2. the fused kernel
  const dim3 grid(static_cast<unsigned>(plan.row_blocks), static_cast<unsigned>(plan.splits));
  auto launch_mma = [&](auto kernel, int threads) {
    cudaError_t s = allow_shared(kernel, shape.shared_bytes);
    if (s != cudaSuccess) return s;
    kernel<<<grid, threads, shape.shared_bytes, stream>>>(p);
    return cudaGetLastError();
  };
  const bool bf16 = mode == precision::bf16;
  const std::int64_t row_words = row_words_of(mode, p.padded_dim);
  switch (shape.family) {
    case kernel_family::wgmma:
    case kernel_family::wgmma_streamed: {
      const bool resident = shape.family == kernel_family::wgmma;
      const wgmma_variant variant = selected_wgmma_variant(mode);
      const bool copy_engine = resident ? variant == wgmma_variant::tma || variant == wgmma_variant::ws : ws_streamed(mode);
      const bool predicted = p.previous != nullptr && wgmma_predicted_reference_for(rows.dim, plan);
      const bool key_pairs = key_pairs_for(mode, shape, rows.count, args.sm_count);
      const bool launched =
          copy_engine &&
          (bf16 ? launch_copy_engine<kernels::wgmma_bf16_operands>(shape.family, args, p, grid, row_words,
                                                                   shape.shared_bytes, predicted, key_pairs, stream,
                                                                   status)
                : launch_copy_engine<kernels::wgmma_tf32_operands>(shape.family, args, p, grid, row_words,
                                                                   shape.shared_bytes, predicted, key_pairs, stream,
                                                                   status));
      if (launched) break;
      // The cp.async kernels (also where the tensor maps could not be made): kWgmmaThreads threads
      // whatever the chosen variant's shape; each sizes its own ring from p.max_shared_bytes.
      if (resident)
        status = bf16 ? launch_mma(wgmma_kernel_for<kernels::wgmma_bf16_operands>(shape.steps), tile::kWgmmaThreads)
                      : launch_mma(wgmma_kernel_for<kernels::wgmma_tf32_operands>(shape.steps), tile::kWgmmaThreads);
      else
        status = bf16 ? launch_mma(kernels::softmin_wgmma_streamed_kernel<kernels::wgmma_bf16_operands>,
                                   tile::kWgmmaThreads)
                      : launch_mma(kernels::softmin_wgmma_streamed_kernel<kernels::wgmma_tf32_operands>,
                                   tile::kWgmmaThreads);
      break;
    }
    case kernel_family::mma_sync:
      if (bf16)
        status = launch_mma(kernels::softmin_mma_kernel<kernels::bf16_operands>, shape.threads);
      else if (mode == precision::fp32)
        status = launch_mma(kernels::softmin_mma_kernel<kernels::fp32_split_operands>, shape.threads);
      else
        status = launch_mma(kernels::softmin_mma_kernel<kernels::tf32_operands>, shape.threads);
      break;
    case kernel_family::fma:
      if (mode == precision::fp64)
        kernels::softmin_simt_kernel<<<grid, tile::kBlockM64, 0, stream>>>(p);
      else if (p.previous != nullptr && predicted_reference_for(rows.dim, plan))
        narrow_predicted_kernel_for(rows.dim)<<<grid, shape.threads, 0, stream>>>(p);
      else
        narrow_kernel_for(rows.dim)<<<grid, shape.threads, 0, stream>>>(p);
      status = cudaGetLastError();
      break;
  }
  return status;
}

}  // namespace flashsinkhorn::detail
