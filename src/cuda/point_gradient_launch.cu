// Elementwise kernels of the point gradient (point_gradient_launch.hpp): one thread per entry.
#include "cuda/point_gradient_launch.hpp"

#include "math/point_gradient.hpp"

namespace flashsinkhorn::detail {
namespace {

constexpr int kThreads = 256;

unsigned blocks_for(std::int64_t count) { return static_cast<unsigned>((count + kThreads - 1) / kThreads); }

template <class Point>
__global__ void point_gradient_epilogue_kernel(const point_gradient_epilogue_args a) {
  const std::int64_t index = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (index >= a.rows * a.dim) return;
  const std::int64_t i = index / a.dim;
  const std::int64_t c = index % a.dim;
  const double point = static_cast<double>(static_cast<const Point*>(a.points)[i * a.points_stride + c]);
  const double potential = a.unbalanced ? a.potential[i] : 0.0;
  const double mass = math::plan_row_mass(a.weights[i], a.unbalanced, potential, a.eps, a.lse[i]);
  const double entry = math::point_gradient_entry(a.coefficient, mass, point, a.weighted[index]);
  a.gradient[index] = a.accumulate ? a.gradient[index] + entry : entry;
}

template <class Out>
__global__ void copy_to_view_kernel(Out* out, std::int64_t out_stride, std::int64_t rows, std::int64_t cols,
                                    const double* source, std::int64_t source_stride) {
  const std::int64_t index = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (index >= rows * cols) return;
  const std::int64_t r = index / cols;
  const std::int64_t c = index % cols;
  out[r * out_stride + c] = static_cast<Out>(source[r * source_stride + c]);
}

}  // namespace

cudaError_t launch_point_gradient_epilogue(const point_gradient_epilogue_args& args, cudaStream_t stream) {
  const std::int64_t entries = args.rows * args.dim;
  if (entries == 0) return cudaSuccess;
  if (args.points_are_double)
    point_gradient_epilogue_kernel<double><<<blocks_for(entries), kThreads, 0, stream>>>(args);
  else
    point_gradient_epilogue_kernel<float><<<blocks_for(entries), kThreads, 0, stream>>>(args);
  return cudaGetLastError();
}

cudaError_t launch_copy_to_view(const mutable_matrix_view& out, const double* source, std::int64_t source_stride,
                                cudaStream_t stream) {
  const std::int64_t entries = out.rows * out.cols;
  if (entries == 0) return cudaSuccess;
  if (out.type == dtype::float32)
    copy_to_view_kernel<float><<<blocks_for(entries), kThreads, 0, stream>>>(
        static_cast<float*>(out.data), out.row_stride, out.rows, out.cols, source, source_stride);
  else
    copy_to_view_kernel<double><<<blocks_for(entries), kThreads, 0, stream>>>(
        static_cast<double*>(out.data), out.row_stride, out.rows, out.cols, source, source_stride);
  return cudaGetLastError();
}

}  // namespace flashsinkhorn::detail
