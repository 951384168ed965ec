// The dense Schur preconditioner (dense_schur.hpp).
#include "cuda/dense_schur.hpp"

#include <algorithm>
#include <cmath>

#include "core/sparse_plan_preconditioner.hpp"
#include "cuda/blas_handles.hpp"
#include "cuda/cuda_check.hpp"
#include "flashsinkhorn/error.hpp"

namespace flashsinkhorn::detail {
namespace {

constexpr int kThreads = 256;

unsigned blocks_for(std::int64_t count) { return static_cast<unsigned>((count + kThreads - 1) / kThreads); }

__global__ void identity_kernel(double* identity, std::int64_t m) {
  const std::int64_t j = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j < m) identity[j * m + j] = 1.0;
}

__global__ void root_kernel(const double* values, double* roots, std::int64_t count) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < count) roots[i] = sqrt(values[i]);
}

// S_jj += d_j = max(c_j, (1 + dominance)·coupling_j) + shift (sparse_plan_diagonal).
__global__ void add_diagonal_kernel(double* matrix, const double* column_sums, const double* coupling,
                                    double dominance, double shift, std::int64_t m) {
  const std::int64_t j = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j < m) matrix[j * m + j] += fmax(column_sums[j], (1 + dominance) * coupling[j]) + shift;
}

}  // namespace

bool dense_schur_fits(std::int64_t n, std::int64_t m, std::int64_t d, bool softmax_direct, schur_solve choice) {
  if (n <= 0 || m <= 0 || choice == schur_solve::sparse) return false;
  const double entries = static_cast<double>(n) * static_cast<double>(m);
  const double columns = static_cast<double>(m);
  constexpr std::int64_t kSmallColumns = 2048;
  constexpr double kSmallEntries = double{1 << 24};  // s: 128 MiB
  constexpr double kMaxIdentityPassMultiplyAdds = 1e10;
  const bool small = m <= kSmallColumns && entries <= kSmallEntries &&
                     entries * static_cast<double>(d + m) <= kMaxIdentityPassMultiplyAdds;
  if (small || !softmax_direct) return small;
  // Larger S only where a plan pass (n·m·d) is dear beside the SYRK (n·m²): m ≤ 80·d (unless `dense`).
  constexpr std::int64_t kColumnsPerCoordinate = 80;
  constexpr std::int64_t kMaxColumns = 12288;     // S: 1.2 GB
  constexpr double kMaxEntries = double{1 << 27};  // s: 1 GiB
  constexpr double kMaxBuildOperations = 3e12;     // s, SYRK and potrf in float64
  const double build = entries * static_cast<double>(2 * d) + entries * columns + columns * columns * columns / 3;
  const bool passes_dear = m <= kColumnsPerCoordinate * d || choice == schur_solve::dense;
  return passes_dear && m <= kMaxColumns && entries <= kMaxEntries && build <= kMaxBuildOperations;
}

const double* dense_schur_identity(dense_schur_buffers& b, std::int64_t m, cudaStream_t stream) {
  const auto count = static_cast<std::size_t>(m * m);
  if (b.identity_size != m || b.identity.size() < count) {
    double* identity = reserve(b.identity, count, stream);
    FS_CUDA_CHECK(cudaMemsetAsync(identity, 0, count * sizeof(double), stream));
    identity_kernel<<<blocks_for(m), kThreads, 0, stream>>>(identity, m);
    FS_CUDA_CHECK(cudaGetLastError());
    b.identity_size = m;
  }
  return b.identity.data();
}

dense_schur::dense_schur(dense_schur_buffers& buffers, std::int64_t n, std::int64_t m,
                         const std::vector<double>& row_masses, const std::vector<double>& column_sums, double shift,
                         cudaStream_t stream)
    : buffers_(buffers), m_(m) {
  if (static_cast<std::int64_t>(row_masses.size()) != n || static_cast<std::int64_t>(column_sums.size()) != m)
    throw invalid_argument("dense_schur: vector sizes do not match the plan");
  if (m <= 0) return;
  dense_schur_buffers& b = buffers_;
  double* softmax = b.softmax.data();  // written by the caller's pass
  if (b.softmax.size() < static_cast<std::size_t>(n * m)) throw invalid_argument("dense_schur: the softmax is not there");
  const double* masses = upload(b.masses, row_masses, stream);
  double* roots = reserve(b.root_masses, static_cast<std::size_t>(n), stream);
  root_kernel<<<blocks_for(n), kThreads, 0, stream>>>(masses, roots, n);
  FS_CUDA_CHECK(cudaGetLastError());

  // Column-major, the row-major s and B (n × m) are sᵀ and Bᶜ = Bᵀ (m × n, leading dimension m):
  // Bᶜ = sᵀ·diag(√a) in place (DGMM), coupling = sᵀa = Bᶜ·√a, and S = −Bᶜ·Bᶜᵀ = −BᵀB (lower
  // triangle), then its diagonal.
  cublasHandle_t blas = thread_blas(stream);
  const auto mi = static_cast<int>(m), ni = static_cast<int>(n);
  check_blas(cublasDdgmm(blas, CUBLAS_SIDE_RIGHT, mi, ni, softmax, mi, roots, 1, softmax, mi), "cublasDdgmm");
  double* coupling = reserve(b.coupling, static_cast<std::size_t>(m), stream);
  const double one = 1.0, zero = 0.0, minus_one = -1.0;
  check_blas(cublasDgemv(blas, CUBLAS_OP_N, mi, ni, &one, softmax, mi, roots, 1, &zero, coupling, 1), "cublasDgemv");
  double* matrix = reserve(b.matrix, static_cast<std::size_t>(m * m), stream);
  check_blas(cublasDsyrk(blas, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N, mi, ni, &minus_one, softmax, mi, &zero, matrix, mi),
             "cublasDsyrk");
  const double* sums = upload(b.column_sums, column_sums, stream);
  add_diagonal_kernel<<<blocks_for(m), kThreads, 0, stream>>>(matrix, sums, coupling, kSparsePlanDominance, shift, m);
  FS_CUDA_CHECK(cudaGetLastError());

  cusolverDnHandle_t solver = thread_solver(stream);
  int work = 0;
  check_solver(cusolverDnDpotrf_bufferSize(solver, CUBLAS_FILL_MODE_LOWER, mi, matrix, mi, &work), "potrf_bufferSize");
  double* workspace = reserve(b.workspace, static_cast<std::size_t>(std::max(work, 1)), stream);
  int* info = reserve(b.info, 1, stream);
  check_solver(cusolverDnDpotrf(solver, CUBLAS_FILL_MODE_LOWER, mi, matrix, mi, workspace, work, info), "potrf");
  int host_info = -1;
  FS_CUDA_CHECK(cudaMemcpyAsync(&host_info, info, sizeof(int), cudaMemcpyDeviceToHost, stream));
  FS_CUDA_CHECK(cudaStreamSynchronize(stream));
  factored_ = host_info == 0;
}

void dense_schur::solve(const double* rhs, double* solution, cudaStream_t stream) const {
  if (m_ <= 0) return;
  FS_CUDA_CHECK(cudaMemcpyAsync(solution, rhs, static_cast<std::size_t>(m_) * sizeof(double), cudaMemcpyDeviceToDevice,
                                stream));
  const auto mi = static_cast<int>(m_);
  check_solver(cusolverDnDpotrs(thread_solver(stream), CUBLAS_FILL_MODE_LOWER, mi, 1, buffers_.matrix.data(), mi,
                                solution, mi, buffers_.info.data()),
               "potrs");
}

}  // namespace flashsinkhorn::detail
