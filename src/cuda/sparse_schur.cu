// The device sparse Schur complement and its cooperative CG solve (sparse_schur.hpp).
#include <algorithm>
#include <climits>
#include <cmath>
#include <string>
#include <cub/device/device_radix_sort.cuh>

#include "cuda/cuda_check.hpp"
#include "cuda/plan_top_entries.hpp"
#include "cuda/sparse_schur.hpp"
#include "cuda/sparse_schur_kernels.cuh"
#include "flashsinkhorn/error.hpp"

namespace flashsinkhorn::detail {
namespace {

constexpr int kThreads = 256;

unsigned blocks_for(std::int64_t count) { return static_cast<unsigned>((count + kThreads - 1) / kThreads); }

// S_k as the kernels see it, over `b` (its diagonal parts once they are reserved).
kernels::sparse_schur_view view_of(const sparse_schur_buffers& b, std::int64_t n, std::int64_t m, int entries_per_row) {
  kernels::sparse_schur_view view;
  view.n = n;
  view.m = m;
  view.entries_per_row = entries_per_row;
  view.entry_keys = b.keys.data();
  view.entry_weights = b.weights.data();
  view.column_offsets = b.column_offsets.data();
  view.column_rows = b.column_rows.data();
  view.column_weights = b.column_weights.data();
  view.diagonal = b.diagonal.data();
  view.inverse_diagonal = b.inverse_diagonal.data();
  return view;
}

int bits_for(std::int64_t largest) {
  int bits = 1;
  while ((std::int64_t{1} << bits) <= largest) ++bits;
  return bits;
}

}  // namespace

sparse_schur::sparse_schur(sparse_schur_buffers& buffers, const int* entry_keys, const double* entry_values,
                           std::int64_t n, int entries_per_row, const std::vector<double>& row_masses,
                           const std::vector<double>& column_sums, double shift, int device, cudaStream_t stream)
    : buffers_(buffers), n_(n), m_(static_cast<std::int64_t>(column_sums.size())), entries_per_row_(entries_per_row) {
  const std::int64_t entries = n * entries_per_row;
  if (entries >= INT_MAX || m_ >= INT_MAX)
    throw unsupported("the sparse_plan preconditioner indexes its entries with 32 bits: n·K and m must be < 2^31");
  if (static_cast<std::int64_t>(row_masses.size()) != n) throw invalid_argument("sparse_schur: row masses size");
  if (entries_per_row != kTopEntries)
    throw invalid_argument("sparse_schur: the solve is compiled for " + std::to_string(kTopEntries) + " entries a row");
  sparse_schur_buffers& b = buffers_;
  const double* masses = upload(b.masses, row_masses, stream);
  const double* sums = upload(b.sums, column_sums, stream);
  const auto count = static_cast<std::size_t>(entries);
  reserve(b.weights, count, stream);
  reserve(b.keys, count, stream);
  reserve(b.sort_keys, count, stream);
  reserve(b.sorted_keys, count, stream);
  reserve(b.ids, count, stream);
  reserve(b.sorted_ids, count, stream);
  reserve(b.column_rows, count, stream);
  reserve(b.column_weights, count, stream);

  // W and the sort's inputs, then the entries by column (stable: ascending e within a column), each
  // with its row and weight.
  FS_CUDA_CHECK(cudaMemcpyAsync(b.keys.data(), entry_keys, count * sizeof(int), cudaMemcpyDeviceToDevice, stream));
  if (entries > 0) {
    kernels::sparse_schur_weights_kernel<<<blocks_for(entries), kThreads, 0, stream>>>(
        n, entries_per_row, entry_keys, entry_values, masses, m_, b.weights.data(), b.sort_keys.data(), b.ids.data());
    FS_CUDA_CHECK(cudaGetLastError());
    const int end_bit = bits_for(m_);
    std::size_t temp_bytes = 0;
    FS_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, b.sort_keys.data(), b.sorted_keys.data(),
                                                  b.ids.data(), b.sorted_ids.data(), static_cast<int>(entries), 0,
                                                  end_bit, stream));
    reserve(b.sort_temp, std::max<std::size_t>(temp_bytes, 1), stream);
    FS_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(b.sort_temp.data(), temp_bytes, b.sort_keys.data(),
                                                  b.sorted_keys.data(), b.ids.data(), b.sorted_ids.data(),
                                                  static_cast<int>(entries), 0, end_bit, stream));
    kernels::sparse_schur_columns_kernel<<<blocks_for(entries), kThreads, 0, stream>>>(
        b.sorted_ids.data(), entries, entries_per_row, b.weights.data(), b.column_rows.data(), b.column_weights.data());
    FS_CUDA_CHECK(cudaGetLastError());
  }
  reserve(b.column_offsets, static_cast<std::size_t>(m_ + 1), stream);
  kernels::sparse_schur_offsets_kernel<<<blocks_for(m_ + 1), kThreads, 0, stream>>>(b.sorted_keys.data(), entries, m_,
                                                                                    b.column_offsets.data());
  FS_CUDA_CHECK(cudaGetLastError());

  const auto columns = static_cast<std::size_t>(m_);
  reserve(b.diagonal, columns, stream);
  reserve(b.inverse_diagonal, columns, stream);
  const kernels::sparse_schur_view view = view_of(b, n_, m_, entries_per_row_);
  if (m_ > 0) {
    kernels::sparse_schur_diagonal_kernel<<<blocks_for(m_), kThreads, 0, stream>>>(
        view, sums, shift, kSparsePlanDominance, b.diagonal.data(), b.inverse_diagonal.data());
    FS_CUDA_CHECK(cudaGetLastError());
  }

  // The cooperative solve's grid: every CTA resident, and no more CTAs than there is work for.
  int sm_count = 0, per_sm = 0;
  FS_CUDA_CHECK(cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, device));
  FS_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernels::sparse_schur_solve_kernel<kTopEntries>,
                                                              kernels::kSparseSchurThreads, 0));
  const std::int64_t wanted = (std::max(n_, m_) + kernels::kSparseSchurThreads - 1) / kernels::kSparseSchurThreads;
  blocks_ = static_cast<int>(std::clamp<std::int64_t>(wanted, 1, std::int64_t{sm_count} * std::max(per_sm, 1)));
  reserve(b.row_values, static_cast<std::size_t>(std::max<std::int64_t>(n_, 1)), stream);
  for (device_buffer<double>* vector : {&b.residual, &b.scaled, &b.product, &b.direction, &b.direction_product})
    reserve(*vector, columns, stream);
  reserve(b.partials, static_cast<std::size_t>(3 * blocks_), stream);
  reserve(b.iterations, 1, stream);
  FS_CUDA_CHECK(cudaMemsetAsync(b.iterations.data(), 0, sizeof(int), stream));
}

void sparse_schur::solve(const double* rhs, double* solution, const int* skip, cudaStream_t stream, double tolerance,
                         int max_iterations) const {
  if (m_ == 0) return;
  const sparse_schur_buffers& b = buffers_;
  kernels::sparse_schur_view view = view_of(b, n_, m_, entries_per_row_);
  kernels::sparse_schur_work work;
  work.row_values = b.row_values.data();
  work.residual = b.residual.data();
  work.scaled = b.scaled.data();
  work.product = b.product.data();
  work.direction = b.direction.data();
  work.direction_product = b.direction_product.data();
  work.partials = b.partials.data();
  work.iterations = b.iterations.data();
  void* args[] = {&view,      &work,           const_cast<double**>(&rhs), &solution,
                  &tolerance, &max_iterations, const_cast<int**>(&skip)};
  FS_CUDA_CHECK(cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(kernels::sparse_schur_solve_kernel<kTopEntries>),
                                            dim3(static_cast<unsigned>(blocks_)), dim3(kernels::kSparseSchurThreads),
                                            args, 0, stream));
}

int sparse_schur::last_iterations(cudaStream_t stream) const {
  int iterations = 0;
  if (buffers_.iterations.size() == 0) return 0;
  FS_CUDA_CHECK(cudaMemcpyAsync(&iterations, buffers_.iterations.data(), sizeof(int), cudaMemcpyDeviceToHost, stream));
  FS_CUDA_CHECK(cudaStreamSynchronize(stream));
  return iterations;
}

}  // namespace flashsinkhorn::detail
