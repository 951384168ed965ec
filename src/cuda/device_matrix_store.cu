// The device matrix store (device_matrix_store.hpp): element kernels for the store's operations,
// the backend's plan passes for its products.
#include "cuda/device_matrix_store.hpp"

#include <cuda_bf16.h>

#include <string>
#include <utility>

#include "core/transfer_count.hpp"
#include "cuda/cuda_check.hpp"
#include "flashsinkhorn/error.hpp"
#include "math/round_operand.hpp"

namespace flashsinkhorn::detail {
namespace {

constexpr int kThreads = 256;

unsigned blocks_for(std::int64_t count) { return static_cast<unsigned>((count + kThreads - 1) / kThreads); }

// The operand a pass sees for `value` in `mode` (core/operand_rounding.hpp's, on the device).
__device__ double operand(double value, precision mode) {
  const auto single = static_cast<float>(value);
  switch (mode) {
    case precision::fp64: return value;
    case precision::fp32: return single;
    case precision::tf32: return math::round_to_tf32(single);
    case precision::bf16: return math::round_to_bf16(single);
  }
  return value;
}

// out (rows, dim) := the stored points (rows, padded_dim) in the storage type of `mode`, as doubles.
__global__ void decode_points_kernel(const void* stored, std::int64_t rows, std::int64_t dim, std::int64_t padded_dim,
                                     precision mode, double* out) {
  const std::int64_t e = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e >= rows * dim) return;
  const std::int64_t at = (e / dim) * padded_dim + e % dim;
  switch (mode) {
    case precision::fp64: out[e] = static_cast<const double*>(stored)[at]; break;
    case precision::bf16: out[e] = __bfloat162float(static_cast<const __nv_bfloat16*>(stored)[at]); break;
    case precision::fp32:
    case precision::tf32: out[e] = static_cast<const float*>(stored)[at]; break;
  }
}

// stored (padded_rows, padded_dim), zeroed beforehand, := operand(values (rows, dim)) in `mode`'s
// storage type.
__global__ void encode_rows_kernel(const double* values, std::int64_t rows, std::int64_t dim, std::int64_t padded_dim,
                                   precision mode, void* stored) {
  const std::int64_t e = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e >= rows * dim) return;
  const std::int64_t at = (e / dim) * padded_dim + e % dim;
  const double v = operand(values[e], mode);
  switch (mode) {
    case precision::fp64: static_cast<double*>(stored)[at] = v; break;
    case precision::bf16: static_cast<__nv_bfloat16*>(stored)[at] = __float2bfloat16(static_cast<float>(v)); break;
    case precision::fp32:
    case precision::tf32: static_cast<float*>(stored)[at] = static_cast<float>(v); break;
  }
}

__global__ void round_kernel(double* values, std::int64_t count, precision mode) {
  const std::int64_t e = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e < count) values[e] = operand(values[e], mode);
}

struct combine_term {
  const double* source = nullptr;
  std::int64_t stride = 0;  // source columns
  std::int64_t column = 0;
  const double* row_scale = nullptr;
  double scale = 1;
};
constexpr int kMaxTerms = 4;
struct combine_args {
  double* target = nullptr;
  std::int64_t rows = 0, stride = 0, column = 0, width = 0;
  int accumulate = 0;
  int terms = 0;
  combine_term term[kMaxTerms];
};

// matrix_store::combine: one thread per target element (each reads its sources before writing).
__global__ void combine_kernel(const combine_args a) {
  const std::int64_t e = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e >= a.rows * a.width) return;
  const std::int64_t i = e / a.width, c = e % a.width;
  double* out = a.target + i * a.stride + a.column + c;
  double sum = a.accumulate ? *out : 0.0;
  for (int t = 0; t < a.terms; ++t) {
    const combine_term& term = a.term[t];
    const double scale = term.scale * (term.row_scale != nullptr ? term.row_scale[i] : 1.0);
    sum += scale * term.source[i * term.stride + term.column + c];
  }
  *out = sum;
}

// d_i = Σ_c a[i, ·]·b[i, ·]: one warp per row.
__global__ void row_dots_kernel(const double* a, std::int64_t a_stride, const double* b, std::int64_t b_stride,
                                std::int64_t rows, std::int64_t width, double* out) {
  const std::int64_t row = (static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;
  double sum = 0;
  for (std::int64_t c = lane; c < width; c += 32) sum += a[row * a_stride + c] * b[row * b_stride + c];
  for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
  if (lane == 0) out[row] = sum;
}

// out (rows, cols) := the view's elements (float or double, `stride` elements between rows).
__global__ void from_view_kernel(const void* source, bool is_double, std::int64_t stride, std::int64_t rows,
                                 std::int64_t cols, double* out) {
  const std::int64_t e = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e >= rows * cols) return;
  const std::int64_t at = (e / cols) * stride + e % cols;
  out[e] = is_double ? static_cast<const double*>(source)[at] : static_cast<const float*>(source)[at];
}

__global__ void to_view_kernel(const double* in, std::int64_t rows, std::int64_t cols, void* target, bool is_double,
                               std::int64_t stride) {
  const std::int64_t e = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e >= rows * cols) return;
  const std::int64_t at = (e / cols) * stride + e % cols;
  if (is_double)
    static_cast<double*>(target)[at] = in[e];
  else
    static_cast<float*>(target)[at] = static_cast<float>(in[e]);
}

__global__ void first_nonfinite_kernel(const double* values, std::int64_t count, unsigned long long* first) {
  const std::int64_t e = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e < count && !isfinite(values[e])) atomicMin(first, static_cast<unsigned long long>(e));
}

}  // namespace

void device_matrix_store::check_device(memory_space space, int device, const std::string& name) const {
  if (space == memory_space::cuda && device != context_.device)
    throw invalid_argument(name + " lives on cuda:" + std::to_string(device) + ", the solver on cuda:" +
                           std::to_string(context_.device));
}

unsigned char* device_matrix_store::staging(std::size_t bytes) const { return reserve(staging_, bytes, context_.stream); }

void device_matrix_store::write_view(int id, const matrix_view& view, const std::string& name) {
  FS_CUDA_CHECK(cudaSetDevice(context_.device));
  check_device(view.space, view.device, name);
  const std::size_t element = static_cast<std::size_t>(size_of(view.type));
  const void* source = view.data;
  std::int64_t stride = view.row_stride;
  if (view.space == memory_space::cuda && context_.order_after_caller) context_.order_after_caller();
  if (view.space == memory_space::host && view.rows * view.cols > 0) {  // packed rows, in the view's dtype
    const std::size_t row_bytes = static_cast<std::size_t>(view.cols) * element;
    unsigned char* packed = staging(row_bytes * static_cast<std::size_t>(view.rows));
    FS_CUDA_CHECK(cudaMemcpy2DAsync(packed, row_bytes, view.data, static_cast<std::size_t>(view.row_stride) * element,
                                    row_bytes, static_cast<std::size_t>(view.rows), cudaMemcpyHostToDevice,
                                    context_.stream));
    count_host_to_device(context_.transfers, static_cast<std::int64_t>(row_bytes) * view.rows);
    source = packed;
    stride = view.cols;
  }
  double* out = shape(id, view.rows, view.cols);
  if (view.rows * view.cols == 0) return;
  from_view_kernel<<<blocks_for(view.rows * view.cols), kThreads, 0, context_.stream>>>(
      source, view.type == dtype::float64, stride, view.rows, view.cols, out);
  FS_CUDA_CHECK(cudaGetLastError());
}

void device_matrix_store::read_into(int id, const mutable_matrix_view& out, const std::string& name) const {
  FS_CUDA_CHECK(cudaSetDevice(context_.device));
  check_device(out.space, out.device, name);
  const matrix& m = at(id);
  if (m.rows * m.cols == 0) return;
  const std::size_t element = static_cast<std::size_t>(size_of(out.type));
  const bool on_device = out.space == memory_space::cuda;
  if (on_device && context_.order_after_caller) context_.order_after_caller();
  void* target = on_device ? out.data : staging(static_cast<std::size_t>(m.rows * m.cols) * element);
  to_view_kernel<<<blocks_for(m.rows * m.cols), kThreads, 0, context_.stream>>>(
      m.values.data(), m.rows, m.cols, target, out.type == dtype::float64, on_device ? out.row_stride : m.cols);
  FS_CUDA_CHECK(cudaGetLastError());
  if (!on_device) {
    const std::size_t row_bytes = static_cast<std::size_t>(m.cols) * element;
    FS_CUDA_CHECK(cudaMemcpy2DAsync(out.data, static_cast<std::size_t>(out.row_stride) * element, target, row_bytes,
                                    row_bytes, static_cast<std::size_t>(m.rows), cudaMemcpyDeviceToHost,
                                    context_.stream));
    count_device_to_host(context_.transfers, static_cast<std::int64_t>(row_bytes) * m.rows);
  }
  FS_CUDA_CHECK(cudaStreamSynchronize(context_.stream));  // the caller reads `out` when we return
}

std::int64_t device_matrix_store::first_nonfinite(int id) const {
  FS_CUDA_CHECK(cudaSetDevice(context_.device));
  const matrix& m = at(id);
  if (flag_.size() == 0) flag_ = device_buffer<unsigned long long>(1, context_.stream);
  FS_CUDA_CHECK(cudaMemsetAsync(flag_.data(), 0xff, sizeof(unsigned long long), context_.stream));
  if (m.rows * m.cols > 0)
    first_nonfinite_kernel<<<blocks_for(m.rows * m.cols), kThreads, 0, context_.stream>>>(m.values.data(),
                                                                                            m.rows * m.cols, flag_.data());
  FS_CUDA_CHECK(cudaGetLastError());
  unsigned long long first = 0;
  FS_CUDA_CHECK(cudaMemcpyAsync(&first, flag_.data(), sizeof first, cudaMemcpyDeviceToHost, context_.stream));
  FS_CUDA_CHECK(cudaStreamSynchronize(context_.stream));
  count_device_to_host(context_.transfers, static_cast<std::int64_t>(sizeof first));
  return first == ~0ull ? -1 : static_cast<std::int64_t>(first);
}

const device_matrix_store::matrix& device_matrix_store::at(int id) const {
  const auto found = matrices_.find(id);
  if (found == matrices_.end()) throw error("device matrix store: no matrix " + std::to_string(id));
  return found->second;
}

double* device_matrix_store::shape(int id, std::int64_t rows, std::int64_t cols) {
  matrix& m = matrices_[id];
  m.rows = rows;
  m.cols = cols;
  return reserve(m.values, static_cast<std::size_t>(rows * cols), context_.stream);
}

const double* device_matrix_store::upload_vector(int slot, const std::vector<double>& host) const {
  double* device = reserve(vectors_[static_cast<std::size_t>(slot)], host.size(), context_.stream);
  FS_CUDA_CHECK(cudaMemcpyAsync(device, host.data(), host.size() * sizeof(double), cudaMemcpyHostToDevice,
                                context_.stream));
  count_host_to_device(context_.transfers, static_cast<std::int64_t>(host.size() * sizeof(double)));
  return device;
}

std::vector<double> device_matrix_store::download(const double* device, std::size_t count) const {
  std::vector<double> host(count);
  FS_CUDA_CHECK(cudaMemcpyAsync(host.data(), device, count * sizeof(double), cudaMemcpyDeviceToHost, context_.stream));
  FS_CUDA_CHECK(cudaStreamSynchronize(context_.stream));
  count_device_to_host(context_.transfers, static_cast<std::int64_t>(count * sizeof(double)));
  return host;
}

void device_matrix_store::write(int id, const std::vector<double>& values, std::int64_t rows, std::int64_t cols) {
  FS_CUDA_CHECK(cudaSetDevice(context_.device));
  if (!values.empty() && values.size() != static_cast<std::size_t>(rows * cols))
    throw error("device matrix store: " + std::to_string(values.size()) + " values for a " + std::to_string(rows) +
                "×" + std::to_string(cols) + " matrix");
  double* data = shape(id, rows, cols);
  const std::size_t bytes = static_cast<std::size_t>(rows * cols) * sizeof(double);
  if (values.empty()) {
    FS_CUDA_CHECK(cudaMemsetAsync(data, 0, bytes, context_.stream));
    return;
  }
  FS_CUDA_CHECK(cudaMemcpyAsync(data, values.data(), bytes, cudaMemcpyHostToDevice, context_.stream));
  count_host_to_device(context_.transfers, static_cast<std::int64_t>(bytes));
}

void device_matrix_store::load_points(int id, side s) {
  FS_CUDA_CHECK(cudaSetDevice(context_.device));
  const device_cloud_view& view = context_.clouds[static_cast<int>(s)]->row_view;
  double* out = shape(id, view.count, view.dim);
  decode_points_kernel<<<blocks_for(view.count * view.dim), kThreads, 0, context_.stream>>>(
      view.points, view.count, view.dim, view.padded_dim, context_.mode, out);
  FS_CUDA_CHECK(cudaGetLastError());
}

void device_matrix_store::round_to_operands(int id) {
  FS_CUDA_CHECK(cudaSetDevice(context_.device));
  matrix& m = matrices_.at(id);
  if (context_.mode == precision::fp64) return;
  round_kernel<<<blocks_for(m.rows * m.cols), kThreads, 0, context_.stream>>>(m.values.data(), m.rows * m.cols,
                                                                               context_.mode);
  FS_CUDA_CHECK(cudaGetLastError());
}

std::vector<double> device_matrix_store::read(int id) const {
  FS_CUDA_CHECK(cudaSetDevice(context_.device));
  const matrix& m = at(id);
  return download(m.values.data(), static_cast<std::size_t>(m.rows * m.cols));
}

std::vector<double> device_matrix_store::column(int id, std::int64_t column) const {
  FS_CUDA_CHECK(cudaSetDevice(context_.device));
  const matrix& m = at(id);
  std::vector<double> host(static_cast<std::size_t>(m.rows));
  FS_CUDA_CHECK(cudaMemcpy2DAsync(host.data(), sizeof(double), m.values.data() + column,
                                  static_cast<std::size_t>(m.cols) * sizeof(double), sizeof(double),
                                  static_cast<std::size_t>(m.rows), cudaMemcpyDeviceToHost, context_.stream));
  FS_CUDA_CHECK(cudaStreamSynchronize(context_.stream));
  count_device_to_host(context_.transfers, static_cast<std::int64_t>(host.size() * sizeof(double)));
  return host;
}

void device_matrix_store::combine(int target, std::int64_t column, std::int64_t width, bool accumulate,
                                  const std::vector<matrix_term>& terms) {
  FS_CUDA_CHECK(cudaSetDevice(context_.device));
  if (terms.size() > static_cast<std::size_t>(kMaxTerms))
    throw error("device matrix store: combine takes at most " + std::to_string(kMaxTerms) + " terms");
  matrix& out = matrices_.at(target);
  combine_args a;
  a.target = out.values.data();
  a.rows = out.rows;
  a.stride = out.cols;
  a.column = column;
  a.width = width;
  a.accumulate = accumulate ? 1 : 0;
  a.terms = static_cast<int>(terms.size());
  for (std::size_t t = 0; t < terms.size(); ++t) {
    const matrix& source = at(terms[t].source);
    a.term[t] = {source.values.data(), source.cols, terms[t].column,
                 terms[t].row_scale != nullptr ? upload_vector(static_cast<int>(t), *terms[t].row_scale) : nullptr,
                 terms[t].scale};
  }
  if (out.rows * width == 0) return;
  combine_kernel<<<blocks_for(out.rows * width), kThreads, 0, context_.stream>>>(a);
  FS_CUDA_CHECK(cudaGetLastError());
}

std::vector<double> device_matrix_store::row_dots(int a, std::int64_t a_column, int b, std::int64_t b_column,
                                                  std::int64_t width) const {
  FS_CUDA_CHECK(cudaSetDevice(context_.device));
  const matrix& ma = at(a);
  const matrix& mb = at(b);
  double* out = reserve(vectors_[kMaxTerms], static_cast<std::size_t>(ma.rows), context_.stream);
  if (ma.rows == 0) return {};
  row_dots_kernel<<<blocks_for(ma.rows * 32), kThreads, 0, context_.stream>>>(
      ma.values.data() + a_column, ma.cols, mb.values.data() + b_column, mb.cols, ma.rows, width, out);
  FS_CUDA_CHECK(cudaGetLastError());
  return download(out, static_cast<std::size_t>(ma.rows));
}

void device_matrix_store::plan_rows(const plan_rows_request& request, int values, int out) {
  FS_CUDA_CHECK(cudaSetDevice(context_.device));
  const matrix& v = at(values);
  plan_rows_launch_args args =
      context_.pass_args(request.rows, request.keys, request.key_potential, request.eps, v.cols, false);
  args.values = v.values.data();
  args.values_stride = v.cols;
  args.weighted = shape(out, args.rows.count, v.cols);
  FS_CUDA_CHECK(launch_plan_rows(context_.mode, args, context_.stream));
}

const void* device_matrix_store::stored_like(int id, const device_cloud_view& view,
                                             device_buffer<unsigned char>& buffer) const {
  const matrix& m = at(id);
  const std::int64_t element = context_.mode == precision::fp64 ? 8 : context_.mode == precision::bf16 ? 2 : 4;
  const auto bytes = static_cast<std::size_t>(view.padded_count * view.padded_dim * element);
  unsigned char* stored = reserve(buffer, bytes, context_.stream);
  FS_CUDA_CHECK(cudaMemsetAsync(stored, 0, bytes, context_.stream));
  encode_rows_kernel<<<blocks_for(m.rows * m.cols), kThreads, 0, context_.stream>>>(
      m.values.data(), m.rows, m.cols, view.padded_dim, context_.mode, stored);
  FS_CUDA_CHECK(cudaGetLastError());
  return stored;
}

void device_matrix_store::plan_quadratic_rows(const plan_quadratic_request& request, int directions, int values,
                                              int key_directions, int out) {
  FS_CUDA_CHECK(cudaSetDevice(context_.device));
  const matrix& v = at(values);
  plan_rows_launch_args args =
      context_.pass_args(request.rows, request.keys, request.key_potential, request.eps, v.cols, true);
  args.values = v.values.data();
  args.values_stride = v.cols;
  if (plan_pass_is_float64(context_.mode, args.rows.padded_dim)) {
    args.directions = at(directions).values.data();
    if (key_directions >= 0) args.key_directions = at(key_directions).values.data();
  } else {
    args.stored_directions = stored_like(directions, args.rows, stored_directions_);
    if (key_directions >= 0) args.stored_key_directions = stored_like(key_directions, args.keys, stored_key_directions_);
  }
  args.weighted = shape(out, args.rows.count, v.cols);
  FS_CUDA_CHECK(launch_plan_rows(context_.mode, args, context_.stream));
}

}  // namespace flashsinkhorn::detail
