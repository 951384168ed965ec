// The host paths' copies (host_path_copies.hpp).
#include <cuda_runtime.h>

#include <cstring>

#include "core/transfer_count.hpp"
#include "cuda/caller_stream.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/host_path_copies.hpp"
#include "flashsinkhorn/error.hpp"

namespace flashsinkhorn::detail {
namespace {

// A (rows, cols) view with row stride → contiguous bytes; the view then reads them.
matrix_view copy_matrix(const matrix_view& view, std::vector<unsigned char>& bytes, cudaStream_t stream,
                        transfer_statistics* transfers) {
  if (view.space != memory_space::cuda) return view;
  if (view.data == nullptr || view.rows < 0 || view.cols < 0 || view.row_stride < view.cols)
    return view;  // prepare() names it
  const auto element = static_cast<std::size_t>(size_of(view.type));
  const auto row_bytes = static_cast<std::size_t>(view.cols) * element;
  bytes.resize(row_bytes * static_cast<std::size_t>(view.rows));
  if (!bytes.empty()) {
    FS_CUDA_CHECK(cudaSetDevice(view.device));
    FS_CUDA_CHECK(cudaMemcpy2DAsync(bytes.data(), row_bytes, view.data,
                                    static_cast<std::size_t>(view.row_stride) * element, row_bytes,
                                    static_cast<std::size_t>(view.rows), cudaMemcpyDeviceToHost, stream));
    FS_CUDA_CHECK(cudaStreamSynchronize(stream));
    count_device_to_host(transfers, static_cast<std::int64_t>(bytes.size()));
  }
  matrix_view host = view;
  host.data = bytes.data();
  host.row_stride = view.cols;
  host.space = memory_space::host;
  host.device = 0;
  return host;
}

vector_view copy_vector(const vector_view& view, std::vector<unsigned char>& bytes, cudaStream_t stream,
                        transfer_statistics* transfers) {
  if (view.space != memory_space::cuda || view.data == nullptr || view.stride < 1) return view;
  const matrix_view column{view.data, view.size, 1, view.stride, view.type, view.space, view.device};
  const matrix_view copied = copy_matrix(column, bytes, stream, transfers);
  return {copied.data, view.size, 1, view.type, memory_space::host, 0};
}

}  // namespace

host_copy_of_problem copy_problem_to_host(const problem& p, std::optional<std::uintptr_t> caller_stream,
                                          transfer_statistics* transfers) {
  const cudaStream_t stream = stream_of(caller_stream);
  host_copy_of_problem out;
  out.view = p;
  out.view.x = copy_matrix(p.x, out.x, stream, transfers);
  out.view.y = copy_matrix(p.y, out.y, stream, transfers);
  out.view.a = copy_vector(p.a, out.a, stream, transfers);
  out.view.b = copy_vector(p.b, out.b, stream, transfers);
  out.view.initial_f = copy_vector(p.initial_f, out.initial_f, stream, transfers);
  out.view.initial_g = copy_vector(p.initial_g, out.initial_g, stream, transfers);
  return out;
}

void copy_matrix_to_device(const std::vector<double>& values, const mutable_matrix_view& out,
                           std::optional<std::uintptr_t> caller_stream, transfer_statistics* transfers) {
  if (out.space != memory_space::cuda)
    throw invalid_argument("copy_matrix_to_device: the output is not in CUDA memory");
  const auto count = static_cast<std::size_t>(out.rows * out.cols);
  if (values.size() != count)
    throw invalid_argument("copy_matrix_to_device: the values do not match the output's shape");
  if (count == 0) return;
  const auto element = static_cast<std::size_t>(size_of(out.type));
  std::vector<unsigned char> bytes(count * element);
  for (std::size_t k = 0; k < count; ++k) {
    if (out.type == dtype::float32) {
      const auto v = static_cast<float>(values[k]);
      std::memcpy(bytes.data() + k * element, &v, element);
    } else {
      std::memcpy(bytes.data() + k * element, &values[k], element);
    }
  }
  const cudaStream_t stream = stream_of(caller_stream);
  const auto row_bytes = static_cast<std::size_t>(out.cols) * element;
  FS_CUDA_CHECK(cudaSetDevice(out.device));
  FS_CUDA_CHECK(cudaMemcpy2DAsync(out.data, static_cast<std::size_t>(out.row_stride) * element, bytes.data(), row_bytes,
                                  row_bytes, static_cast<std::size_t>(out.rows), cudaMemcpyHostToDevice, stream));
  FS_CUDA_CHECK(cudaStreamSynchronize(stream));  // `bytes` dies on return
  count_host_to_device(transfers, static_cast<std::int64_t>(bytes.size()));
}

}  // namespace flashsinkhorn::detail
