// The device sparse Schur complement and its cooperative CG solve (sparse_schur.hpp).
#include "cuda/sparse_schur.hpp"

#include <cub/device/device_radix_sort.cuh>

#include <algorithm>
#include <climits>
#include <cmath>

#include "cuda/cuda_check.hpp"
#include "cuda/sparse_schur_kernels.cuh"
#include "flashsinkhorn/error.hpp"

namespace flashsinkhorn::detail {
namespace {

constexpr int kThreads = 256;

unsigned blocks_for(std::int64_t count) { return static_cast<unsigned>((count + kThreads - 1) / kThreads); }

double* upload(device_buffer<double>& buffer, const std::vector<double>& values, cudaStream_t stream) {
  buffer = device_buffer<double>(values.size());
  FS_CUDA_CHECK(cudaMemcpyAsync(buffer.data(), values.data(), values.size() * sizeof(double), cudaMemcpyHostToDevice,
                                stream));
  return buffer.data();
}

int bits_for(std::int64_t largest) {
  int bits = 1;
  while ((std::int64_t{1} << bits) <= largest) ++bits;
  return bits;
}

}  // namespace

sparse_schur::sparse_schur(const int* entry_keys, const double* entry_values, std::int64_t n, int entries_per_row,
                           const std::vector<double>& row_masses, const std::vector<double>& column_sums, double shift,
                           int device, cudaStream_t stream)
    : n_(n), m_(static_cast<std::int64_t>(column_sums.size())), entries_per_row_(entries_per_row) {
  const std::int64_t entries = n * entries_per_row;
  if (entries >= INT_MAX || m_ >= INT_MAX)
    throw unsupported("the sparse_plan preconditioner indexes its entries with 32 bits: n·K and m must be < 2^31");
  if (static_cast<std::int64_t>(row_masses.size()) != n) throw invalid_argument("sparse_schur: row masses size");
  device_buffer<double> masses;
  upload(masses, row_masses, stream);
  device_buffer<double> sums;
  upload(sums, column_sums, stream);

  // W and the sort's inputs, then the entries by column (stable: ascending e within a column).
  weights_ = device_buffer<double>(static_cast<std::size_t>(entries));
  keys_ = device_buffer<int>(static_cast<std::size_t>(entries));
  device_buffer<int> sort_keys(static_cast<std::size_t>(entries)), sorted_keys(static_cast<std::size_t>(entries)),
      ids(static_cast<std::size_t>(entries));
  column_entries_ = device_buffer<int>(static_cast<std::size_t>(entries));
  FS_CUDA_CHECK(cudaMemcpyAsync(keys_.data(), entry_keys, static_cast<std::size_t>(entries) * sizeof(int),
                                cudaMemcpyDeviceToDevice, stream));
  if (entries > 0) {
    kernels::sparse_schur_weights_kernel<<<blocks_for(entries), kThreads, 0, stream>>>(
        n, entries_per_row, entry_keys, entry_values, masses.data(), m_, weights_.data(), sort_keys.data(), ids.data());
    FS_CUDA_CHECK(cudaGetLastError());
    const int end_bit = bits_for(m_);
    std::size_t temp_bytes = 0;
    FS_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, sort_keys.data(), sorted_keys.data(), ids.data(),
                                                  column_entries_.data(), static_cast<int>(entries), 0, end_bit, stream));
    device_buffer<unsigned char> temp(std::max<std::size_t>(temp_bytes, 1));
    FS_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp.data(), temp_bytes, sort_keys.data(), sorted_keys.data(),
                                                  ids.data(), column_entries_.data(), static_cast<int>(entries), 0,
                                                  end_bit, stream));
  }
  column_offsets_ = device_buffer<int>(static_cast<std::size_t>(m_ + 1));
  kernels::sparse_schur_offsets_kernel<<<blocks_for(m_ + 1), kThreads, 0, stream>>>(sorted_keys.data(), entries, m_,
                                                                                   column_offsets_.data());
  FS_CUDA_CHECK(cudaGetLastError());

  diagonal_ = device_buffer<double>(static_cast<std::size_t>(m_));
  inverse_diagonal_ = device_buffer<double>(static_cast<std::size_t>(m_));
  kernels::sparse_schur_view view;
  view.n = n_;
  view.m = m_;
  view.entries_per_row = entries_per_row_;
  view.entry_keys = keys_.data();
  view.entry_weights = weights_.data();
  view.column_offsets = column_offsets_.data();
  view.column_entries = column_entries_.data();
  if (m_ > 0) {
    kernels::sparse_schur_diagonal_kernel<<<blocks_for(m_), kThreads, 0, stream>>>(view, sums.data(), shift,
                                                                                   diagonal_.data(),
                                                                                   inverse_diagonal_.data());
    FS_CUDA_CHECK(cudaGetLastError());
  }

  // The cooperative solve's grid: every CTA resident, and no more CTAs than there is work for.
  int sm_count = 0, per_sm = 0;
  FS_CUDA_CHECK(cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, device));
  FS_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernels::sparse_schur_solve_kernel,
                                                              kernels::kSparseSchurThreads, 0));
  const std::int64_t wanted =
      (std::max(n_, m_) + kernels::kSparseSchurThreads - 1) / kernels::kSparseSchurThreads;
  blocks_ = static_cast<int>(std::clamp<std::int64_t>(wanted, 1, std::int64_t{sm_count} * std::max(per_sm, 1)));

  row_values_ = device_buffer<double>(static_cast<std::size_t>(std::max<std::int64_t>(n_, 1)));
  residual_ = device_buffer<double>(static_cast<std::size_t>(m_));
  scaled_ = device_buffer<double>(static_cast<std::size_t>(m_));
  directions_ = device_buffer<double>(static_cast<std::size_t>(2 * m_));
  product_ = device_buffer<double>(static_cast<std::size_t>(m_));
  partials_ = device_buffer<double>(static_cast<std::size_t>(4 * blocks_));
  // The temporaries above are freed when this returns: their work must be done first.
  FS_CUDA_CHECK(cudaStreamSynchronize(stream));
}

void sparse_schur::solve(const double* rhs, double* solution, const int* skip, cudaStream_t stream) const {
  if (m_ == 0) return;
  kernels::sparse_schur_view view;
  view.n = n_;
  view.m = m_;
  view.entries_per_row = entries_per_row_;
  view.entry_keys = keys_.data();
  view.entry_weights = weights_.data();
  view.column_offsets = column_offsets_.data();
  view.column_entries = column_entries_.data();
  view.diagonal = diagonal_.data();
  view.inverse_diagonal = inverse_diagonal_.data();
  kernels::sparse_schur_work work;
  work.row_values = row_values_.data();
  work.residual = residual_.data();
  work.scaled = scaled_.data();
  work.directions = directions_.data();
  work.product = product_.data();
  work.partials = partials_.data();
  double tolerance = kInnerTolerance;
  int iterations = kInnerIterations;
  void* args[] = {&view, &work, const_cast<double**>(&rhs), &solution, &tolerance, &iterations,
                  const_cast<int**>(&skip)};
  FS_CUDA_CHECK(cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(kernels::sparse_schur_solve_kernel),
                                            dim3(static_cast<unsigned>(blocks_)), dim3(kernels::kSparseSchurThreads),
                                            args, 0, stream));
}

}  // namespace flashsinkhorn::detail
