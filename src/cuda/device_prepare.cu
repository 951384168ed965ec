// prepare() on the device (device_prepare.hpp). Elementwise and per-row kernels by hand (they read
// the caller's strided float/double views), each launched once for both clouds; the weights' sums
// one CTA per cloud (block_sum.cuh), the column statistics from the caller's views
// (column_statistics.cuh). Only the cosine cost makes a working copy of the points (its rows are
// normalised first). Few launches, no host-side queries and one wait, at the end: at n ≲ 10⁴ the
// GPU waits on the host's launches here (docs/cuda_backend.md).
#include <math_constants.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>

#include "core/transfer_count.hpp"
#include "cuda/block_sum.cuh"
#include "cuda/caller_views.cuh"
#include "cuda/column_statistics.cuh"
#include "cuda/cuda_check.hpp"
#include "cuda/device_prepare.hpp"
#include "cuda/tile_config.hpp"
#include "flashsinkhorn/error.hpp"
#include "math/round_operand.hpp"

namespace flashsinkhorn::detail {
namespace {

constexpr int kThreads = 256;
constexpr unsigned long long kNone = ~0ull;  // "no offending index" in the first-index flags

unsigned blocks_for(std::int64_t count) {
  return static_cast<unsigned>(std::max<std::int64_t>(1, (count + kThreads - 1) / kThreads));
}

// Lanes that share one row in store_rows_kernel: the power of two ≥ dim, at most a warp.
int lanes_per_row(std::int64_t dim) {
  int lanes = 1;
  while (lanes < 32 && lanes < dim) lanes *= 2;
  return lanes;
}

// What the preparation's kernels leave for the host: first offending indices (kNone when none),
// the weight sums and the diameter. One download, at the end: the checks are made once every
// kernel has run (on bad values they compute garbage, in bounds, which the error then discards).
struct validation_flags {
  unsigned long long first_nonfinite_point[2];  // flat index r·d + c, per cloud
  unsigned long long first_nonfinite_weight[2];
  unsigned long long first_negative_weight[2];
  unsigned long long first_zero_row[2];             // cosine cost
  unsigned long long first_nonfinite_potential[2];  // initial_f, initial_g
  double weight_sum[2];                             // Σw as given (uniform: 1)
  double diameter;                                  // the joint bounding box's diagonal
};

// Grid (blocks, 2): out[s] (rows, cols) contiguous ← cloud s's view; its first non-finite flat index.
__global__ void read_points_kernel(per_cloud<matrix_source> sources, per_cloud<double*> out, validation_flags* flags) {
  const int s = static_cast<int>(blockIdx.y);
  const matrix_source& source = sources.side[s];
  const std::int64_t index = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (index >= source.rows * source.cols) return;
  const double v = source.at(index / source.cols, index % source.cols);
  out.side[s][index] = v;
  if (!isfinite(v)) atomicMin(&flags->first_nonfinite_point[s], static_cast<unsigned long long>(index));
}

// CTA s of 2: out[s] ← cloud s's weights view (1/count when absent); its first non-finite and first
// negative index; Σw as read into flags->weight_sum[s].
__global__ void __launch_bounds__(kBlockSumThreads)
    read_weights_kernel(per_cloud<vector_source> sources, per_cloud<std::int64_t> counts, per_cloud<double*> out,
                        validation_flags* flags) {
  const int s = static_cast<int>(blockIdx.x);
  const vector_source& source = sources.side[s];
  const std::int64_t count = counts.side[s];
  double sum = 0;
  for (std::int64_t i = threadIdx.x; i < count; i += kBlockSumThreads) {
    const double w = source.data == nullptr ? 1.0 / static_cast<double>(count) : source.at(i);
    out.side[s][i] = w;
    sum += w;
    if (!isfinite(w))
      atomicMin(&flags->first_nonfinite_weight[s], static_cast<unsigned long long>(i));
    else if (w < 0)
      atomicMin(&flags->first_negative_weight[s], static_cast<unsigned long long>(i));
  }
  const double total = block_sum(sum);
  if (threadIdx.x == 0) flags->weight_sum[s] = total;
}

// out ← the potential view; the first non-finite index.
__global__ void read_potential_kernel(vector_source source, double* out, unsigned long long* first_nonfinite) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= source.size) return;
  const double v = source.at(i);
  out[i] = v;
  if (!isfinite(v)) atomicMin(first_nonfinite, static_cast<unsigned long long>(i));
}

// Grid (blocks, 2): cloud s's w ← w/Σw when normalising (Σw = totals[s], device scalars); log w
// (−∞ where 0).
__global__ void normalise_weights_kernel(per_cloud<double*> weights, per_cloud<double*> log_weights,
                                         per_cloud<std::int64_t> counts, const double* totals, bool normalise) {
  const int s = static_cast<int>(blockIdx.y);
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= counts.side[s]) return;
  double* w = weights.side[s];
  const double v = normalise ? w[i] / totals[s] : w[i];
  w[i] = v;
  log_weights.side[s][i] = v > 0 ? log(v) : -CUDART_INF;
}

// Row i ← row i/‖row i‖ (the cosine cost); the first zero row.
__global__ void normalise_rows_kernel(double* points, std::int64_t rows, std::int64_t dim,
                                      unsigned long long* first_zero_row) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= rows) return;
  double* row = points + i * dim;
  double sq = 0;
  for (std::int64_t k = 0; k < dim; ++k) sq += row[k] * row[k];
  const double norm = sqrt(sq);
  if (!(norm > 0)) {
    atomicMin(first_zero_row, static_cast<unsigned long long>(i));
    return;
  }
  for (std::int64_t k = 0; k < dim; ++k) row[k] /= norm;
}

// The bits of a bf16 that holds `rounded` exactly (already rounded to bf16).
__device__ std::uint16_t bf16_bits(float rounded) { return static_cast<std::uint16_t>(__float_as_uint(rounded) >> 16); }

// Per row: p − μ rounded to the mode and stored at (i, c) of the (padded_n, padded_d) storage
// (zero padding written beforehand); the float copy of p − μ (tf32, bf16); s·‖stored‖². A row is
// shared by `lanes` adjacent threads (a power of two ≤ 32, lanes_per_row), each taking every
// lanes-th coordinate, so that a warp reads whole rows (coalesced at d = 64) and the row's norm is
// a shuffle sum within the group.
__global__ void store_rows_kernel(const matrix_source points, const double* mean, std::int64_t padded_dim, int lanes,
                                  precision mode, double cost_scale, void* stored, float* exact,
                                  double* scaled_sq_norm) {
  const std::int64_t rows = points.rows, dim = points.cols;
  const std::int64_t thread = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::int64_t i = thread / lanes;
  const int lane = static_cast<int>(thread % lanes);
  double sq = 0;
  for (std::int64_t c = lane; i < rows && c < dim; c += lanes) {
    const double centred = points.at(i, c) - mean[c];
    const auto single = static_cast<float>(centred);
    const std::int64_t at = i * padded_dim + c;
    double value = centred;
    switch (mode) {
      case precision::fp64:
        static_cast<double*>(stored)[at] = centred;
        break;
      case precision::fp32:
        value = single;
        static_cast<float*>(stored)[at] = single;
        break;
      case precision::tf32: {
        const float r = math::round_to_tf32(single);
        value = r;
        static_cast<float*>(stored)[at] = r;
        break;
      }
      case precision::bf16: {
        const float r = math::round_to_bf16(single);
        value = r;
        static_cast<std::uint16_t*>(stored)[at] = bf16_bits(r);
        break;
      }
    }
    if (exact != nullptr) exact[i * dim + c] = single;
    sq += value * value;
  }
  // Every thread of the warp takes part (rows past the end add 0): groups of `lanes` adjacent
  // threads sum their shares.
  for (int offset = lanes / 2; offset > 0; offset /= 2) sq += __shfl_xor_sync(0xffffffffu, sq, offset, lanes);
  if (lane == 0 && i < rows) scaled_sq_norm[i] = cost_scale * sq;
}

std::int64_t storage_bytes(precision mode) {
  switch (mode) {
    case precision::fp64:
      return 8;
    case precision::bf16:
      return 2;
    case precision::fp32:
    case precision::tf32:
      return 4;
  }
  return 8;
}

// The shortest text that reads back as v (validate.cpp's formatting of values in messages).
std::string str(double v) {
  char text[32];
  const auto [end, error] = std::to_chars(text, text + sizeof text, v);
  return error == std::errc{} ? std::string(text, end) : std::string("?");
}

// One device double (or float) of a caller's view, read to the host for an error message.
double read_element(const void* data, std::int64_t offset, bool is_double, cudaStream_t stream,
                    transfer_statistics* transfers) {
  double value = 0;
  if (is_double) {
    FS_CUDA_CHECK(
        cudaMemcpyAsync(&value, static_cast<const double*>(data) + offset, 8, cudaMemcpyDeviceToHost, stream));
    count_device_to_host(transfers, 8);
  } else {
    float single = 0;
    FS_CUDA_CHECK(
        cudaMemcpyAsync(&single, static_cast<const float*>(data) + offset, 4, cudaMemcpyDeviceToHost, stream));
    count_device_to_host(transfers, 4);
    value = single;
  }
  FS_CUDA_CHECK(cudaStreamSynchronize(stream));
  return value;
}

template <class View>
void require_on_device(const View& view, int device, const char* name) {
  if (view.space != memory_space::cuda)
    throw invalid_argument(std::string(name) +
                           " lives in host memory but X lives in CUDA memory; pass X, Y, a, b, initial_f "
                           "and initial_g in the same memory");
  if (view.device != device)
    throw invalid_argument(std::string(name) + " lives on CUDA device " + std::to_string(view.device) +
                           ", the solver runs on device " + std::to_string(device));
  if (view.data == nullptr) throw invalid_argument(std::string(name) + " has no data");
}

// The per-cloud working state of the preparation: where its points are read (the caller's view,
// or for the cosine cost `normalised`, the rows over their norms), its weights.
struct working_cloud {
  std::int64_t count = 0;
  matrix_source points{};
  device_buffer<double> normalised;  // (count, dim), cosine cost only
  device_buffer<double> weights;
  device_buffer<double> log_weights;
};

// prepare()'s messages for the first offending point or weight (validate.cpp).
void report_points(const validation_flags& flags, int side, const matrix_view& view, const char* name,
                   cudaStream_t stream, transfer_statistics* transfers) {
  const unsigned long long bad = flags.first_nonfinite_point[side];
  if (bad == kNone) return;
  const auto index = static_cast<std::int64_t>(bad);
  const std::int64_t row = index / view.cols, column = index % view.cols;
  const double v =
      read_element(view.data, row * view.row_stride + column, view.type == dtype::float64, stream, transfers);
  throw invalid_argument(std::string(name) + " contains " + (std::isnan(v) ? "NaN" : "Inf") + " at row " +
                         std::to_string(row) + ", column " + std::to_string(column));
}

void report_weights(const validation_flags& flags, int side, const vector_view& view, const char* name,
                    cudaStream_t stream, transfer_statistics* transfers) {
  if (view.empty()) return;
  const unsigned long long nonfinite = flags.first_nonfinite_weight[side];
  const unsigned long long negative = flags.first_negative_weight[side];
  const unsigned long long first = std::min(nonfinite, negative);
  if (first != kNone) {
    const auto i = static_cast<std::int64_t>(first);
    const double w = read_element(view.data, i * view.stride, view.type == dtype::float64, stream, transfers);
    if (first == nonfinite)
      throw invalid_argument(std::string(name) + " contains " + (std::isnan(w) ? "NaN" : "Inf") + " at index " +
                             std::to_string(i));
    throw invalid_argument(std::string(name) + " has a negative weight " + str(w) + " at index " + std::to_string(i));
  }
  const double total = flags.weight_sum[side];
  if (!(total > 0)) throw invalid_argument(std::string(name) + ": all weights are zero");
  if (!std::isfinite(total)) throw invalid_argument(std::string(name) + ": the weights sum to Inf");
}

// The backend's storage of one prepared cloud (device_cloud.hpp), from its centred points.
device_cloud store_cloud(working_cloud&& work, const double* mean, std::int64_t dim, precision mode, double cost_scale,
                         cudaStream_t stream) {
  device_cloud out;
  const std::int64_t n = work.count;
  const std::int64_t padded_n = tile::round_up(n, tile::kRowPadding);
  const std::int64_t padded_d = softmin_padded_dim(mode, dim);
  out.points = device_buffer<unsigned char>(static_cast<std::size_t>(padded_n * padded_d * storage_bytes(mode)), stream);
  FS_CUDA_CHECK(cudaMemsetAsync(out.points.data(), 0, out.points.bytes(), stream));
  const bool rounded_copy = mode == precision::tf32 || mode == precision::bf16;
  if (rounded_copy) out.exact_points = device_buffer<float>(static_cast<std::size_t>(n * dim), stream);
  out.scaled_sq_norm = device_buffer<double>(static_cast<std::size_t>(n), stream);
  const int lanes = lanes_per_row(dim);
  store_rows_kernel<<<blocks_for(n * lanes), kThreads, 0, stream>>>(work.points, mean, padded_d, lanes, mode,
                                                                    cost_scale, out.points.data(),
                                                                    out.exact_points.data(), out.scaled_sq_norm.data());
  FS_CUDA_CHECK_LAUNCH();
  out.exact = rounded_copy ? exact_points_view{out.exact_points.data(), dim, false}
                           : exact_points_view{out.points.data(), padded_d, mode == precision::fp64};
  out.weights = std::move(work.weights);
  out.log_weights = std::move(work.log_weights);
  out.make_views(n, padded_n, dim, padded_d);  // (no key_points: no label cost on this path)
  return out;
}

// The column statistics' partials of both clouds (column_statistics.cuh), chunks[s] row chunks each.
struct column_partials {
  std::int64_t dim = 0;
  int chunks[2] = {1, 1};
  device_buffer<double> partials;  // (dim, chunks[0], 3) of X, then (dim, chunks[1], 3) of Y
  double* side(int s) { return partials.data() + (s == 0 ? 0 : dim * chunks[0] * 3); }
};

// Launches the partials pass over both clouds' points (where work[s].points reads them); it flags
// their first non-finite value in flags->first_nonfinite_point. Reads work[s].weights as they are.
column_partials launch_column_partials(const working_cloud (&work)[2], validation_flags* flags, cudaStream_t stream) {
  namespace stats = column_statistics;
  const std::int64_t dim = work[0].points.cols;
  const int columns = stats::columns_per_cta(dim);
  const std::int64_t column_groups = (dim + columns - 1) / columns;
  if (column_groups > 65535) throw unsupported("prepare_on_device: more than 16,776,960 coordinates per point");
  column_partials out;
  out.dim = dim;
  for (int s = 0; s < 2; ++s) out.chunks[s] = stats::chunks_for(work[s].count, dim);
  out.partials = device_buffer<double>(static_cast<std::size_t>(dim * (out.chunks[0] + out.chunks[1]) * 3), stream);
  stats::sources in{};
  for (int s = 0; s < 2; ++s) {
    in.points.side[s] = work[s].points;
    in.weights.side[s] = work[s].weights.data();
    in.chunks.side[s] = out.chunks[s];
    in.partials.side[s] = out.side(s);
    in.first_nonfinite.side[s] = &flags->first_nonfinite_point[s];
  }
  const auto most_chunks = static_cast<unsigned>(std::max(out.chunks[0], out.chunks[1]));
  stats::partials_kernel<<<dim3(most_chunks, static_cast<unsigned>(column_groups), 2), stats::kThreads, 0, stream>>>(
      in, columns);
  FS_CUDA_CHECK_LAUNCH();
  return out;
}

// The cosine cost's working copy: work[s].normalised ← the caller's points as doubles (their first
// non-finite value flagged), which work[s].points then reads.
void copy_points(working_cloud (&work)[2], validation_flags* flags, cudaStream_t stream) {
  per_cloud<matrix_source> sources{};
  per_cloud<double*> copies{};
  std::int64_t most_entries = 0;
  for (int s = 0; s < 2; ++s) {
    working_cloud& w = work[s];
    const std::int64_t dim = w.points.cols;
    w.normalised = device_buffer<double>(static_cast<std::size_t>(w.count * dim), stream);
    sources.side[s] = w.points;
    copies.side[s] = w.normalised.data();
    w.points = {w.normalised.data(), w.count, dim, dim, true};
    most_entries = std::max(most_entries, w.count * dim);
  }
  read_points_kernel<<<dim3(blocks_for(most_entries), 2), kThreads, 0, stream>>>(sources, copies, flags);
  FS_CUDA_CHECK_LAUNCH();
}

}  // namespace

device_prepared_problem prepare_on_device(const problem& p, const options& o, cudaStream_t stream,
                                          transfer_statistics* transfers) {
  if (!p.labels.empty()) throw unsupported("prepare_on_device: label costs are prepared on the host");
  const int device = o.cuda_device;
  require_on_device(p.x, device, "X");
  require_on_device(p.y, device, "Y");
  if (!p.a.empty()) require_on_device(p.a, device, "a");
  if (!p.b.empty()) require_on_device(p.b, device, "b");
  if (!p.initial_f.empty()) require_on_device(p.initial_f, device, "initial_f");
  if (!p.initial_g.empty()) require_on_device(p.initial_g, device, "initial_g");
  for (const auto* view : {&p.x, &p.y}) {
    if (view->row_stride < view->cols)
      throw invalid_argument(std::string(view == &p.x ? "X" : "Y") + ": row_stride " +
                             std::to_string(view->row_stride) + " is smaller than the number of columns " +
                             std::to_string(view->cols));
  }
  for (const auto* view : {&p.a, &p.b, &p.initial_f, &p.initial_g}) {
    if (!view->empty() && view->stride < 1)
      throw invalid_argument(std::string(view == &p.a           ? "a"
                                         : view == &p.b         ? "b"
                                         : view == &p.initial_f ? "initial_f"
                                                                : "initial_g") +
                             " must have a positive stride");
  }
  const std::int64_t dim = p.x.cols;
  const matrix_view* views[2] = {&p.x, &p.y};
  const vector_view* weights[2] = {&p.a, &p.b};

  // Read and validate: the weights into working buffers (with their sums), the flags in one
  // struct. The points are read where they lie, and checked by the column statistics' pass, which
  // reads every value; the cosine cost copies and checks them first (their rows are normalised
  // before the statistics).
  device_buffer<validation_flags> flags_on_device(1, stream);
  FS_CUDA_CHECK(cudaMemsetAsync(flags_on_device.data(), 0xFF, sizeof(validation_flags), stream));  // kNone
  validation_flags* flags = flags_on_device.data();
  const bool cosine = o.cost == cost_kind::cosine;
  working_cloud work[2];
  per_cloud<vector_source> weight_sources{};
  per_cloud<std::int64_t> counts{};
  per_cloud<double*> weight_buffers{};
  for (int s = 0; s < 2; ++s) {
    const matrix_view& view = *views[s];
    working_cloud& w = work[s];
    w.count = view.rows;
    w.points = {view.data, view.rows, view.cols, view.row_stride, view.type == dtype::float64};
    w.weights = device_buffer<double>(static_cast<std::size_t>(view.rows), stream);
    w.log_weights = device_buffer<double>(static_cast<std::size_t>(view.rows), stream);
    const vector_view& wv = *weights[s];
    weight_sources.side[s] = {wv.data, wv.size, wv.stride, wv.type == dtype::float64};
    counts.side[s] = view.rows;
    weight_buffers.side[s] = w.weights.data();
  }
  read_weights_kernel<<<2, kBlockSumThreads, 0, stream>>>(weight_sources, counts, weight_buffers, flags);
  FS_CUDA_CHECK_LAUNCH();
  // (before the weights are normalised in place: the statistics divide by the sums as read)
  std::optional<column_partials> columns;
  if (cosine)
    copy_points(work, flags, stream);
  else
    columns = launch_column_partials(work, flags, stream);
  device_prepared_problem out;
  const vector_view* potentials[2] = {&p.initial_f, &p.initial_g};
  device_buffer<double>* potential_buffers[2] = {&out.initial_f, &out.initial_g};
  for (int s = 0; s < 2; ++s) {
    const vector_view& view = *potentials[s];
    if (view.empty()) continue;
    *potential_buffers[s] = device_buffer<double>(static_cast<std::size_t>(view.size), stream);
    const vector_source source{view.data, view.size, view.stride, view.type == dtype::float64};
    read_potential_kernel<<<blocks_for(view.size), kThreads, 0, stream>>>(source, potential_buffers[s]->data(),
                                                                          &flags->first_nonfinite_potential[s]);
    FS_CUDA_CHECK_LAUNCH();
  }
  out.cost_scale = p.cost_scale;
  if (cosine) {
    for (int s = 0; s < 2; ++s) {
      normalise_rows_kernel<<<blocks_for(work[s].count), kThreads, 0, stream>>>(
          work[s].normalised.data(), work[s].count, dim, &flags->first_zero_row[s]);
      FS_CUDA_CHECK_LAUNCH();
    }
    out.cost_scale = 0.5;  // 1 − cos(x, y) = ½‖x̂ − ŷ‖²
    columns = launch_column_partials(work, flags, stream);
  }

  // The weights normalised; the column statistics finished: the weighted means (centring) and the
  // bounding box; the clouds stored.
  per_cloud<double*> log_weights{};
  for (int s = 0; s < 2; ++s) log_weights.side[s] = work[s].log_weights.data();
  normalise_weights_kernel<<<dim3(blocks_for(std::max(counts.side[0], counts.side[1])), 2), kThreads, 0, stream>>>(
      weight_buffers, log_weights, counts, flags->weight_sum, o.normalize_weights);
  FS_CUDA_CHECK_LAUNCH();
  device_buffer<double> column_results(static_cast<std::size_t>(2 * dim), stream);  // mean (d,), range_sq (d,)
  double* mean = column_results.data();
  double* range_sq = mean + dim;
  namespace stats = column_statistics;
  stats::finish_kernel<<<static_cast<unsigned>((dim + stats::kWarps - 1) / stats::kWarps), stats::kThreads, 0,
                         stream>>>(columns->side(0), columns->chunks[0], columns->side(1), columns->chunks[1],
                                   &flags->weight_sum[0], &flags->weight_sum[1], dim, mean, range_sq);
  FS_CUDA_CHECK_LAUNCH();
  stats::diameter_kernel<<<1, stats::kThreads, 0, stream>>>(range_sq, dim, &flags->diameter);
  FS_CUDA_CHECK_LAUNCH();
  for (int s = 0; s < 2; ++s)
    out.clouds[s] = store_cloud(std::move(work[s]), mean, dim, o.precision, out.cost_scale, stream);

  // The one wait: the flags, sums and diameter, then the checks in prepare()'s order.
  validation_flags host_flags{};
  FS_CUDA_CHECK(cudaMemcpyAsync(&host_flags, flags, sizeof host_flags, cudaMemcpyDeviceToHost, stream));
  FS_CUDA_CHECK(cudaStreamSynchronize(stream));
  count_device_to_host(transfers, sizeof host_flags);
  report_points(host_flags, 0, p.x, "X", stream, transfers);
  report_points(host_flags, 1, p.y, "Y", stream, transfers);
  report_weights(host_flags, 0, p.a, "a", stream, transfers);
  report_weights(host_flags, 1, p.b, "b", stream, transfers);
  out.mass_a = p.a.empty() ? 1.0 : host_flags.weight_sum[0];
  out.mass_b = p.b.empty() ? 1.0 : host_flags.weight_sum[1];
  const bool balanced = !o.reach_x && !o.reach_y;
  if (balanced && !o.normalize_weights && std::abs(out.mass_a - out.mass_b) > 1e-9 * std::max(out.mass_a, out.mass_b)) {
    throw invalid_argument("balanced OT needs equal masses, but sum(a) = " + std::to_string(out.mass_a) +
                           " and sum(b) = " + std::to_string(out.mass_b) +
                           "; normalise the weights or set a reach (unbalanced OT)");
  }
  for (int s = 0; s < 2; ++s) {  // validate_potential's message
    if (host_flags.first_nonfinite_potential[s] != kNone)
      throw invalid_argument(std::string(s == 0 ? "initial_f" : "initial_g") + " is not finite at index " +
                             std::to_string(host_flags.first_nonfinite_potential[s]));
  }
  for (int s = 0; s < 2; ++s) {
    if (cosine && host_flags.first_zero_row[s] != kNone)
      throw invalid_argument(std::string(s == 0 ? "X" : "Y") + " row " + std::to_string(host_flags.first_zero_row[s]) +
                             " is zero; the cosine cost is undefined for it");
  }
  out.diameter = o.diameter ? *o.diameter : host_flags.diameter;
  // The working buffers, the flags and the column results are freed on return in the order of
  // `stream` (device_buffer.hpp), after the kernels above: no wait.
  return out;
}

}  // namespace flashsinkhorn::detail
