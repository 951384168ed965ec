// One CUDA memory pool per device for the backend's buffers (device_memory_pool.hpp).
#include "cuda/device_memory_pool.hpp"

#include <cuda_runtime.h>

#include <array>
#include <cstdint>
#include <mutex>
#include <string>

#include "cuda/cuda_check.hpp"
#include "flashsinkhorn/error.hpp"

namespace flashsinkhorn::detail {
namespace {

constexpr int kMaxDevices = 64;

// The pool of each device, made on first use; null where the device has no memory pools.
struct pool_table {
  std::mutex mutex;
  std::array<bool, kMaxDevices> made{};
  std::array<cudaMemPool_t, kMaxDevices> pools{};
};

pool_table& table() {
  static pool_table t;
  return t;
}

cudaMemPool_t make_pool(int device) {
  int supported = 0;
  FS_CUDA_CHECK(cudaDeviceGetAttribute(&supported, cudaDevAttrMemoryPoolsSupported, device));
  if (supported == 0) return nullptr;
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.handleTypes = cudaMemHandleTypeNone;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = device;
  cudaMemPool_t pool = nullptr;
  FS_CUDA_CHECK(cudaMemPoolCreate(&pool, &props));
  // Keep what solvers free for the next one, up to an eighth of the device (the default, 0, gives
  // memory back to the driver at each synchronisation: a cudaFree in all but name). The bound is
  // for the other allocators in the process: torch's cannot ask this pool to give memory back when
  // it runs out (flashsinkhorn.empty_cache() can), so an idle cache must not crowd the device.
  std::size_t free_bytes = 0, total_bytes = 0;
  FS_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  std::uint64_t keep = total_bytes / 8;
  FS_CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
  return pool;
}

// The current device's pool (null: none), made on first use.
cudaMemPool_t current_pool() {
  int device = 0;
  FS_CUDA_CHECK(cudaGetDevice(&device));
  if (device < 0 || device >= kMaxDevices) return nullptr;
  pool_table& t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  if (!t.made[static_cast<std::size_t>(device)]) {
    t.pools[static_cast<std::size_t>(device)] = make_pool(device);
    t.made[static_cast<std::size_t>(device)] = true;
  }
  return t.pools[static_cast<std::size_t>(device)];
}

bool capturing(cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  FS_CUDA_CHECK(cudaStreamIsCapturing(stream, &status));
  return status != cudaStreamCaptureStatusNone;
}

[[noreturn]] void throw_out_of_memory(std::size_t bytes, const char* how) {
  (void)cudaGetLastError();  // clear the allocation error so later calls work
  throw out_of_memory("CUDA device out of memory: " + std::string(how) + " of " + std::to_string(bytes) +
                      " bytes failed");
}

// A request beyond the device's whole memory (the pool may refuse it with another error than
// cudaErrorMemoryAllocation).
bool larger_than_the_device(std::size_t bytes) {
  (void)cudaGetLastError();
  std::size_t free_bytes = 0, total_bytes = 0;
  return cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess && bytes > total_bytes;
}

device_allocation plain_allocation(std::size_t bytes) {
  device_allocation a;
  const cudaError_t status = cudaMalloc(&a.data, bytes);
  if (status == cudaErrorMemoryAllocation) throw_out_of_memory(bytes, "cudaMalloc");
  FS_CUDA_CHECK(status);
  return a;
}

}  // namespace

device_allocation allocate_device(std::size_t bytes, cudaStream_t stream) {
  const cudaMemPool_t pool = current_pool();
  if (pool == nullptr || capturing(stream)) return plain_allocation(bytes);
  device_allocation a;
  a.pooled = true;
  cudaError_t status = cudaMallocFromPoolAsync(&a.data, bytes, pool, stream);
  if (status != cudaSuccess && status != cudaErrorMemoryAllocation && larger_than_the_device(bytes)) {
    throw_out_of_memory(bytes, "cudaMallocFromPoolAsync");  // whatever error the pool chose for it
  }
  if (status == cudaErrorMemoryAllocation) {
    // The pools' cached blocks may be what is missing: wait for the frees in flight, give the
    // cache back and try once more.
    (void)cudaGetLastError();
    FS_CUDA_CHECK(cudaDeviceSynchronize());
    release_device_pools();
    status = cudaMallocFromPoolAsync(&a.data, bytes, pool, stream);
    if (status == cudaErrorMemoryAllocation) throw_out_of_memory(bytes, "cudaMallocFromPoolAsync");
  }
  FS_CUDA_CHECK(status);
  return a;
}

void free_device(const device_allocation& allocation, cudaStream_t stream) noexcept {
  if (allocation.data == nullptr) return;
  if (allocation.pooled) {
    FS_CUDA_CHECK_LOG(cudaFreeAsync(allocation.data, stream));
  } else {
    FS_CUDA_CHECK_LOG(cudaFree(allocation.data));
  }
}

std::size_t pooled_bytes_reserved() {
  const cudaMemPool_t pool = current_pool();
  if (pool == nullptr) return 0;
  std::uint64_t bytes = 0;
  FS_CUDA_CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &bytes));
  return static_cast<std::size_t>(bytes);
}

namespace {

// The pool of `device` if one was made (null otherwise); never makes one.
cudaMemPool_t existing_pool(int device) {
  if (device < 0 || device >= kMaxDevices) return nullptr;
  pool_table& t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  return t.made[static_cast<std::size_t>(device)] ? t.pools[static_cast<std::size_t>(device)] : nullptr;
}

std::size_t pool_attribute(cudaMemPool_t pool, cudaMemPoolAttr attribute) {
  std::uint64_t bytes = 0;
  FS_CUDA_CHECK(cudaMemPoolGetAttribute(pool, attribute, &bytes));
  return static_cast<std::size_t>(bytes);
}

}  // namespace

pool_statistics device_pool_statistics(int device) {
  const cudaMemPool_t pool = existing_pool(device);
  if (pool == nullptr) return {};
  return {pool_attribute(pool, cudaMemPoolAttrUsedMemCurrent), pool_attribute(pool, cudaMemPoolAttrUsedMemHigh),
          pool_attribute(pool, cudaMemPoolAttrReservedMemCurrent)};
}

void reset_pool_peak(int device) {
  const cudaMemPool_t pool = existing_pool(device);
  if (pool == nullptr) return;
  std::uint64_t zero = 0;  // the only value the watermark may be set to: it restarts from the current use
  FS_CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &zero));
}

void release_device_pools() {
  pool_table& t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  for (const cudaMemPool_t pool : t.pools) {
    if (pool == nullptr) continue;
    // Frees still in flight on some stream keep their blocks until they complete; trimming leaves
    // those (cudaMemPoolTrimTo gives back what it safely can).
    FS_CUDA_CHECK(cudaMemPoolTrimTo(pool, 0));
  }
}

}  // namespace flashsinkhorn::detail
